/* hloscope HTML report: builds the page from the JSON blocks embedded in it.
 *
 * Contract: every string that comes from HLO or user code is data. It is put into the
 * DOM with textContent / createTextNode / setAttribute on harmless attributes, never
 * through innerHTML; SVG diagrams go through DOMParser and a sanitiser. A module's data
 * is parsed, and its tables and diagrams are built, only when its section is opened;
 * long tables are virtualised (only the visible rows exist in the DOM).
 *
 * The script is in pieces under report/, one job each, that share one scope: html.py
 * joins them in a fixed order (`_REPORT_JS`) inside one `(function () { "use strict";
 * ... })();`, after roofline.js. This piece: DOM helpers (h, add, clear, readJson) and
 * how numbers, names and chips are written.
 */

  var t0 = performance.now();

  // ---------------------------------------------------------------- DOM helpers

  function h(tag, props) {
    var e = document.createElement(tag);
    if (props) {
      for (var k in props) {
        if (!Object.prototype.hasOwnProperty.call(props, k)) continue;
        var v = props[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "class") e.className = v;
        else if (k === "text") e.textContent = String(v);
        else if (k.slice(0, 2) === "on" && typeof v === "function") e.addEventListener(k.slice(2), v);
        else if (k === "data") for (var d in v) e.dataset[d] = String(v[d]);
        else e.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }

  function add(parent, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) {
      for (var i = 0; i < kid.length; i++) add(parent, kid[i]);
    } else if (kid instanceof Node) {
      parent.appendChild(kid);
    } else {
      parent.appendChild(document.createTextNode(String(kid)));
    }
  }

  function clear(e) {
    while (e.firstChild) e.removeChild(e.firstChild);
    return e;
  }

  function readJson(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  // ---------------------------------------------------------------- formatting

  function fmtInt(n) {
    if (n === null || n === undefined) return "–";
    return Number(n).toLocaleString("en-US");
  }

  function fmtBytes(n) {
    if (n === null || n === undefined) return "–";
    var units = ["B", "KiB", "MiB", "GiB"];
    var size = Number(n);
    for (var i = 0; i < units.length; i++) {
      if (size < 1024 || i === units.length - 1) {
        return i === 0 ? size.toFixed(0) + " B" : size.toFixed(1) + " " + units[i];
      }
      size /= 1024;
    }
    return String(n);
  }

  function fmtUs(us) {
    if (us === null || us === undefined || isNaN(us)) return "–";
    if (us >= 1e6) return (us / 1e6).toFixed(2) + " s";
    if (us >= 1e3) return (us / 1e3).toFixed(2) + " ms";
    return us.toFixed(us >= 100 ? 0 : 1) + " µs";
  }

  function fmtS(s) {
    return s === null || s === undefined ? "–" : fmtUs(s * 1e6);
  }

  function fmtPct(x) {
    return x === null || x === undefined ? "–" : (x * 100).toFixed(1) + " %";
  }

  // TensorFlow's mangling, as analysis/compilations.py readable_name drops it
  var TF_MANGLING = /_*__Xla.*?((?:\.\d+)*)$/;

  function shortName(name, width) {
    name = String(name === null || name === undefined ? "" : name).replace(TF_MANGLING, "$1");
    width = width || 48;
    if (name.length <= width) return name;
    var half = Math.floor((width - 1) / 2);
    return name.slice(0, half) + "…" + name.slice(name.length - (width - 1 - half));
  }

  function chip(text, cls) {
    return h("span", { class: "hs-chip" + (cls ? " " + cls : "") }, text);
  }

  function statusChip(status) {
    return chip(status, "hs-st-" + String(status).replace(/[^a-z]/g, ""));
  }

  function cmp(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b));
  }
