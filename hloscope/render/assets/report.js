/* hloscope HTML report: builds the page from the JSON blocks embedded in it.
 *
 * Contract: every string that comes from HLO or user code is data. It is put into the
 * DOM with textContent / createTextNode / setAttribute on harmless attributes, never
 * through innerHTML; SVG diagrams go through DOMParser and a sanitiser. A module's data
 * is parsed, and its tables and diagrams are built, only when its section is opened;
 * long tables are virtualised (only the visible rows exist in the DOM).
 */
(function () {
  "use strict";

  var ROW_H = 26; // px, fixed row height of virtual tables (matches report.css)
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

  function arrow(a, b) {
    return (a === null || a === undefined ? "–" : fmtInt(a)) + " → " +
      (b === null || b === undefined ? "–" : fmtInt(b));
  }

  var TF_HASH = /__XlaMustCompile_(?:true|false)_config_proto_\d+_executor_type_\d+_/;

  function shortName(name, width) {
    name = String(name === null || name === undefined ? "" : name).replace(TF_HASH, "");
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

  function launches(after) {
    if (!after) return "–";
    return (after.launches_exact ? "" : "~") + fmtInt(after.launches);
  }

  function cmp(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b));
  }

  // ---------------------------------------------------------------- virtual table

  /* A sortable, filterable table that keeps only the rows in view in the DOM.
   * columns: [{label, get(row) -> sort value, cell(row) -> text|Node, num, cls, title}] */
  function VTable(opts) {
    this.columns = opts.columns;
    this.rows = opts.rows;
    this.onpick = opts.onpick || null;
    this.keyOf = opts.keyOf || null;
    this.search = opts.search || function () { return ""; };
    this.shown = this.rows.slice();
    this.sortCol = opts.sortCol === undefined ? -1 : opts.sortCol;
    this.sortDesc = !!opts.sortDesc;
    this.selected = null;
    this.query = "";
    this.haystack = null;
    this.first = -1;
    this.last = -1;
    var self = this;
    this.head = h("tr");
    this.columns.forEach(function (c, i) {
      var th = h("th", {
        class: (c.num ? "hs-num " : "") + (c.cls || ""), scope: "col", tabindex: 0,
        title: c.title || "sort by " + c.label,
        onclick: function () { self.sortBy(i); },
        onkeydown: function (ev) { if (ev.key === "Enter") self.sortBy(i); },
      }, c.label);
      if (c.w) th.style.width = c.w;
      self.head.appendChild(th);
    });
    this.body = h("tbody");
    this.table = h("table", { class: "hs-table hs-vtable" }, h("thead", null, this.head), this.body);
    this.scroller = h("div", { class: "hs-vscroll" }, this.table);
    if (opts.height) this.scroller.style.maxHeight = opts.height + "px";
    this.count = h("span", { class: "hs-count" });
    this.scroller.addEventListener("scroll", function () { self.paint(false); }, { passive: true });
    this.element = h("div", { class: "hs-vt" }, this.scroller);
    this.applySort();
  }

  VTable.prototype.setQuery = function (q) {
    this.query = String(q || "").trim().toLowerCase();
    if (this.query && !this.haystack) {
      var search = this.search;
      this.haystack = this.rows.map(function (r) { return search(r).toLowerCase(); });
    }
    var terms = this.query.split(/\s+/).filter(Boolean);
    if (!terms.length) {
      this.shown = this.rows.slice();
    } else {
      var hay = this.haystack;
      this.shown = this.rows.filter(function (_r, i) {
        for (var t = 0; t < terms.length; t++) if (hay[i].indexOf(terms[t]) < 0) return false;
        return true;
      });
    }
    this.applySort();
  };

  VTable.prototype.sortBy = function (i) {
    if (this.sortCol === i) this.sortDesc = !this.sortDesc;
    else { this.sortCol = i; this.sortDesc = !!this.columns[i].num; }
    this.applySort();
  };

  VTable.prototype.applySort = function () {
    var self = this;
    if (this.sortCol >= 0) {
      var get = this.columns[this.sortCol].get;
      var sign = this.sortDesc ? -1 : 1;
      var order = new Map();
      this.rows.forEach(function (r, i) { order.set(r, i); });
      this.shown.sort(function (a, b) {
        var c = cmp(get(a), get(b));
        if (c === 0) return order.get(a) - order.get(b);
        // missing values stay last whatever the direction
        var va = get(a), vb = get(b);
        if (va === null || va === undefined) return 1;
        if (vb === null || vb === undefined) return -1;
        return sign * c;
      });
    }
    var ths = this.head.children;
    for (var j = 0; j < ths.length; j++) {
      var on = j === this.sortCol;
      ths[j].setAttribute("aria-sort", on ? (this.sortDesc ? "descending" : "ascending") : "none");
      ths[j].dataset.sort = on ? (this.sortDesc ? "desc" : "asc") : "";
    }
    this.count.textContent = this.shown.length === this.rows.length
      ? fmtInt(this.rows.length) + " rows"
      : fmtInt(this.shown.length) + " of " + fmtInt(this.rows.length) + " rows";
    this.paint(true);
  };

  VTable.prototype.paint = function (force) {
    var n = this.shown.length;
    var viewH = this.scroller.clientHeight || 400;
    var top = this.scroller.scrollTop;
    var first = Math.max(0, Math.floor(top / ROW_H) - 10);
    var last = Math.min(n, Math.ceil((top + viewH) / ROW_H) + 10);
    if (!force && first === this.first && last === this.last) return;
    this.first = first;
    this.last = last;
    var body = clear(this.body);
    var ncol = this.columns.length;
    if (first > 0) body.appendChild(spacer(first * ROW_H, ncol));
    for (var i = first; i < last; i++) body.appendChild(this.rowEl(this.shown[i]));
    if (last < n) body.appendChild(spacer((n - last) * ROW_H, ncol));
    if (n === 0) body.appendChild(h("tr", { class: "hs-empty" }, h("td", { colspan: ncol }, "no rows match")));
  };

  function spacer(px, ncol) {
    var td = h("td", { colspan: ncol });
    var tr = h("tr", { class: "hs-spacer", "aria-hidden": "true" }, td);
    tr.style.height = px + "px";
    return tr;
  }

  VTable.prototype.rowEl = function (r) {
    var self = this;
    var tr = h("tr", { class: "hs-row" });
    if (this.onpick) {
      tr.tabIndex = 0;
      tr.addEventListener("click", function () { self.onpick(r); });
      tr.addEventListener("keydown", function (ev) { if (ev.key === "Enter") self.onpick(r); });
    }
    if (this.keyOf && this.selected !== null && this.keyOf(r) === this.selected) tr.classList.add("hs-picked");
    for (var c = 0; c < this.columns.length; c++) {
      var col = this.columns[c];
      var v = col.cell(r);
      var td = h("td", { class: (col.num ? "hs-num " : "") + (col.cls || "") }, v);
      if (!(v instanceof Node) && v !== null && v !== undefined) td.title = String(v);
      tr.appendChild(td);
    }
    return tr;
  };

  VTable.prototype.select = function (key, scroll) {
    this.selected = key;
    if (scroll && this.keyOf) {
      for (var i = 0; i < this.shown.length; i++) {
        if (this.keyOf(this.shown[i]) === key) {
          var y = i * ROW_H;
          var view = this.scroller.clientHeight;
          if (y < this.scroller.scrollTop || y > this.scroller.scrollTop + view - 2 * ROW_H) {
            this.scroller.scrollTop = Math.max(0, y - view / 3);
          }
          break;
        }
      }
    }
    this.paint(true);
  };

  function filterBox(table, placeholder, label) {
    var input = h("input", {
      type: "search", class: "hs-search", placeholder: placeholder, "aria-label": label,
      spellcheck: "false", autocomplete: "off",
    });
    var pending = 0;
    input.addEventListener("input", function () {
      clearTimeout(pending);
      pending = setTimeout(function () { table.setQuery(input.value); }, 60);
    });
    return h("div", { class: "hs-tools" }, input, table.count);
  }

  // ---------------------------------------------------------------- SVG diagrams

  var SVG_OK = {
    svg: 1, g: 1, title: 1, desc: 1, path: 1, polygon: 1, polyline: 1, ellipse: 1, circle: 1,
    rect: 1, line: 1, text: 1, tspan: 1, defs: 1, lineargradient: 1, radialgradient: 1,
    stop: 1, clippath: 1, marker: 1, a: 1,
  };

  /* Parse an SVG string as XML (never as HTML) and strip everything that could run code. */
  function parseSvg(text) {
    var doc = new DOMParser().parseFromString(text, "image/svg+xml");
    var root = doc.documentElement;
    if (!root || root.nodeName.toLowerCase() !== "svg" || doc.getElementsByTagName("parsererror").length) {
      return null;
    }
    (function clean(el) {
      var kids = Array.prototype.slice.call(el.children);
      for (var i = 0; i < kids.length; i++) {
        if (!SVG_OK[kids[i].localName.toLowerCase()]) el.removeChild(kids[i]);
        else clean(kids[i]);
      }
      var attrs = Array.prototype.slice.call(el.attributes);
      for (var j = 0; j < attrs.length; j++) {
        var name = attrs[j].localName.toLowerCase();
        var value = attrs[j].value;
        if (name.slice(0, 2) === "on" || name === "style" ||
            (name === "href" && value.charAt(0) !== "#") ||
            /javascript:/i.test(value.replace(/\s+/g, ""))) {
          el.removeAttributeNode(attrs[j]);
        }
      }
    })(root);
    return document.importNode(root, true);
  }

  /* Zoom (wheel, buttons) and pan (drag) by changing the SVG's viewBox. */
  function PanZoom(svg, viewport, onclick) {
    var vb = svg.viewBox && svg.viewBox.baseVal;
    var box = vb && vb.width ? { x: vb.x, y: vb.y, w: vb.width, h: vb.height } : null;
    if (!box) {
      var bb = svg.getBBox();
      box = { x: bb.x, y: bb.y, w: bb.width || 100, h: bb.height || 100 };
    }
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    this.svg = svg;
    this.base = box;
    this.view = { x: box.x, y: box.y, w: box.w, h: box.h };
    this.apply(); // `home` once the SVG is in the document and has a size
    var self = this;
    viewport.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      self.zoomAt(Math.exp(ev.deltaY * 0.0015), ev.clientX, ev.clientY);
    }, { passive: false });
    var drag = null;
    viewport.addEventListener("pointerdown", function (ev) {
      if (ev.button !== 0) return;
      drag = { x: ev.clientX, y: ev.clientY, view: Object.assign({}, self.view), moved: false, id: ev.pointerId };
    });
    viewport.addEventListener("pointermove", function (ev) {
      if (!drag) return;
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (!drag.moved && Math.abs(dx) + Math.abs(dy) < 4) return;
      if (!drag.moved) {
        drag.moved = true;
        viewport.classList.add("hs-dragging");
        try { viewport.setPointerCapture(drag.id); } catch (e) { /* pointer already gone */ }
      }
      var s = self.scale();
      self.view.x = drag.view.x - dx * s;
      self.view.y = drag.view.y - dy * s;
      self.apply();
    });
    function end(ev) {
      if (!drag) return;
      var wasClick = !drag.moved;
      drag = null;
      viewport.classList.remove("hs-dragging");
      if (wasClick && ev.type === "pointerup" && onclick) onclick(ev);
    }
    viewport.addEventListener("pointerup", end);
    viewport.addEventListener("pointercancel", end);
  }

  PanZoom.prototype.scale = function () {
    var r = this.svg.getBoundingClientRect();
    return Math.max(this.view.w / (r.width || 1), this.view.h / (r.height || 1));
  };

  PanZoom.prototype.apply = function () {
    var v = this.view;
    this.svg.setAttribute("viewBox", v.x + " " + v.y + " " + v.w + " " + v.h);
  };

  PanZoom.prototype.zoomAt = function (factor, cx, cy) {
    var minW = this.base.w / 80, maxW = this.base.w * 4;
    var w = Math.min(maxW, Math.max(minW, this.view.w * factor));
    factor = w / this.view.w;
    var p = this.toSvg(cx, cy);
    this.view.x = p.x - (p.x - this.view.x) * factor;
    this.view.y = p.y - (p.y - this.view.y) * factor;
    this.view.w *= factor;
    this.view.h *= factor;
    this.apply();
  };

  PanZoom.prototype.zoom = function (factor) {
    var r = this.svg.getBoundingClientRect();
    this.zoomAt(factor, r.left + r.width / 2, r.top + r.height / 2);
  };

  PanZoom.prototype.toSvg = function (cx, cy) {
    var m = this.svg.getScreenCTM();
    if (!m) return { x: this.view.x + this.view.w / 2, y: this.view.y + this.view.h / 2 };
    var pt = this.svg.createSVGPoint();
    pt.x = cx;
    pt.y = cy;
    var q = pt.matrixTransform(m.inverse());
    return { x: q.x, y: q.y };
  };

  /* The first view: the whole diagram, or for a tall one its top at the full width
   * (a top-to-bottom layout starts with the program's inputs). */
  PanZoom.prototype.home = function () {
    var r = this.svg.getBoundingClientRect();
    var b = this.base;
    var fitW = r.width / b.w;
    var fitAll = Math.min(fitW, r.height / b.h);
    if (!r.width || !r.height || fitAll >= 0.6 * fitW) {
      this.fit();
      return;
    }
    this.view = { x: b.x, y: b.y, w: b.w, h: r.height / fitW };
    this.apply();
  };

  PanZoom.prototype.fit = function () {
    this.view = Object.assign({}, this.base);
    this.apply();
  };

  /* Center the view on an element (keeping the zoom) when it is out of view. Works in
   * screen coordinates: Graphviz nests nodes under a transformed group. */
  PanZoom.prototype.reveal = function (el) {
    var r = el.getBoundingClientRect();
    var vr = this.svg.getBoundingClientRect();
    if (!vr.width || !vr.height) return;
    var cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    var inside = cx > vr.left + vr.width * 0.1 && cx < vr.right - vr.width * 0.1 &&
      cy > vr.top + vr.height * 0.1 && cy < vr.bottom - vr.height * 0.1;
    if (inside) return;
    var p = this.toSvg(cx, cy);
    var c = this.toSvg(vr.left + vr.width / 2, vr.top + vr.height / 2);
    this.view.x += p.x - c.x;
    this.view.y += p.y - c.y;
    this.apply();
  };

  /* side: {svg, nodes: {svg element id: [kernel, ...]}} or null. */
  function diagramPanel(which, label, side, hint, onKernel) {
    var viewport = h("div", { class: "hs-viewport", tabindex: 0, "aria-label": label + " (drag to pan, wheel to zoom, click a node)" });
    var panel = h("div", { class: "hs-diagram", data: { side: which } });
    var pz = null;
    var svg = side && side.svg ? parseSvg(side.svg) : null;
    var tools = h("div", { class: "hs-dtools" },
      h("span", { class: "hs-dtitle" }, label),
      h("button", { type: "button", title: "zoom in (+)", onclick: function () { if (pz) pz.zoom(1 / 1.4); } }, "+"),
      h("button", { type: "button", title: "zoom out (−)", onclick: function () { if (pz) pz.zoom(1.4); } }, "−"),
      h("button", { type: "button", title: "fit the whole diagram (0)", onclick: function () { if (pz) pz.fit(); } }, "fit"));
    add(panel, [tools, viewport]);
    if (!svg) {
      add(viewport, h("p", { class: "hs-muted hs-pad" }, hint || "no diagram"));
      return { element: panel, nodes: [], map: {}, pz: null };
    }
    viewport.appendChild(svg);
    var map = side.nodes || {};
    var nodes = Array.prototype.slice.call(svg.querySelectorAll("g.node")).filter(function (g) {
      if (map[g.id]) { g.classList.add("hs-clickable"); return true; }
      return false;
    });
    pz = new PanZoom(svg, viewport, function (ev) {
      var target = ev.target && ev.target.closest ? ev.target.closest("g.node") : null;
      var ks = target ? map[target.id] : null;
      if (ks && ks.length && onKernel) onKernel(ks[0]);
    });
    viewport.addEventListener("keydown", function (ev) {
      if (ev.key === "+" || ev.key === "=") pz.zoom(1 / 1.4);
      else if (ev.key === "-") pz.zoom(1.4);
      else if (ev.key === "0") pz.fit();
    });
    return { element: panel, nodes: nodes, map: map, pz: pz };
  }

  /* Mark the nodes that stand for a kernel; returns the first one. */
  function markNodes(panel, name) {
    if (!panel || !panel.nodes.length) return null;
    var first = null;
    panel.nodes.forEach(function (g) {
      var on = panel.map[g.id].indexOf(name) >= 0;
      g.classList.toggle("hs-sel", on);
      if (on && !first) first = g;
    });
    panel.element.classList.toggle("hs-has-sel", !!first);
    return first;
  }

  // A kernel's source ops; those inferred for a kernel that holds none are marked.
  function kernelOps(k) {
    if (!k.source_ops.length && k.inferred_ops) {
      return k.inferred_ops.ops.map(function (o) { return shortName(o, 40); }).join(", ") + " (inferred from " + k.inferred_ops.how + ")";
    }
    return k.source_ops.map(function (o) { return shortName(o, 40); }).join(", ");
  }

  // An op's kernels; kernels inferred for an op no kernel does the work of are marked.
  function opKernels(p) {
    if (!p.kernels.length && p.inferred && p.inferred.length) {
      return p.inferred.map(function (i) { return i.kernel; }).join(", ") + " (inferred)";
    }
    return p.kernels.join(", ");
  }

  // ---------------------------------------------------------------- overview

  function runHeader(ov) {
    var run = ov.run || {};
    var versions = run.versions && typeof run.versions === "object" ? run.versions : {};
    var fw = run.framework ? run.framework + (versions[run.framework] ? " " + versions[run.framework] : "") : null;
    var facts = [
      ["script", run.script],
      ["framework", fw],
      ["platform", run.platform],
      ["device", run.device],
      ["wall time", typeof run.wall_time_s === "number" ? run.wall_time_s.toFixed(1) + " s" : null],
      ["exit code", run.exit_code],
      ["modules", run.modules_total],
    ];
    var dl = h("dl", { class: "hs-facts" });
    facts.forEach(function (f) {
      if (f[1] === null || f[1] === undefined || f[1] === "") return;
      add(dl, h("div", null, h("dt", null, f[0]), h("dd", null, String(f[1]))));
    });
    var other = Object.keys(versions).filter(function (k) { return k !== run.framework; });
    if (other.length) {
      add(dl, h("div", null, h("dt", null, "versions"),
        h("dd", null, other.map(function (k) { return k + " " + versions[k]; }).join(", "))));
    }
    return h("header", { class: "hs-head" },
      h("h1", null, h("span", { class: "hs-logo" }, "hloscope"), " report"),
      h("p", { class: "hs-path" }, String(run.path || "")),
      dl);
  }

  /* Kernel time per execution of a module timing summary, or null. */
  function kernelTime(t) {
    if (!t || !t.executions) return null;
    var us = typeof t.kernel_us === "number" ? t.kernel_us : t.total_us;
    return typeof us === "number" ? us / t.executions : null;
  }

  function kindsCell(after, limit) {
    if (!after || !after.kernels_by_kind) return "–";
    var kinds = Object.keys(after.kernels_by_kind);
    var wrap = h("span", { class: "hs-kinds" });
    kinds.slice(0, limit).forEach(function (k) {
      add(wrap, chip(k + " " + after.kernels_by_kind[k], "hs-kind"));
    });
    if (kinds.length > limit) add(wrap, h("span", { class: "hs-muted" }, " +" + (kinds.length - limit)));
    return wrap;
  }

  function modulesTable(rows, timed, openModule) {
    var head = ["module", "instructions before → after", "ops → kernels", "kernels by kind",
      "launches", "ops per kernel", "ops alone"];
    if (timed) head.push("kernel time / execution");
    var tbody = h("tbody");
    rows.forEach(function (m) {
      var b = m.before, a = m.after;
      var t = m.timing;
      var cells = [
        h("td", { class: "hs-mname" },
          h("a", { href: "#hs-m-" + m.index, title: m.name, onclick: function (ev) { ev.preventDefault(); openModule(m.index, true); } },
            shortName(m.name, 56)),
          m.error ? h("span", { class: "hs-err", title: m.error }, " ⚠") : null),
        h("td", { class: "hs-num" }, arrow(b && b.instructions, a && a.instructions)),
        h("td", { class: "hs-num" }, arrow(b && b.ops, a && a.kernels)),
        h("td", null, kindsCell(a, 4)),
        h("td", { class: "hs-num" }, launches(a)),
        h("td", { class: "hs-num" }, m.ops_per_kernel ? m.ops_per_kernel.toFixed(1) : "–"),
        h("td", { class: "hs-num" }, m.alone === null || m.alone === undefined ? "–" : fmtInt(m.alone)),
      ];
      if (timed) cells.push(h("td", { class: "hs-num" }, fmtUs(kernelTime(t))));
      add(tbody, h("tr", { data: { key: m.key } }, cells));
    });
    return h("table", { class: "hs-table hs-modules" },
      h("thead", null, h("tr", null, head.map(function (x, i) {
        return h("th", { class: i && i !== 3 ? "hs-num" : null, scope: "col" }, x);
      }))), tbody);
  }

  function barChart(items, label, value, fmt, onclick) {
    var max = 0;
    items.forEach(function (it) { max = Math.max(max, value(it) || 0); });
    var list = h("div", { class: "hs-bars", role: "list" });
    items.forEach(function (it) {
      var v = value(it) || 0;
      var bar = h("span", { class: "hs-bar" });
      bar.style.width = (max ? Math.max(0.5, (100 * v) / max) : 0) + "%";
      var row = h("div", { class: "hs-barrow", role: "listitem", tabindex: onclick ? 0 : null },
        h("span", { class: "hs-barlabel", title: label(it).title || label(it).text }, label(it).node || label(it).text),
        h("span", { class: "hs-bartrack" }, bar),
        h("span", { class: "hs-barvalue hs-num" }, fmt(it)));
      if (onclick) {
        row.addEventListener("click", function () { onclick(it); });
        row.addEventListener("keydown", function (ev) { if (ev.key === "Enter") onclick(it); });
      }
      add(list, row);
    });
    return list;
  }

  function heaviestSection(ov, openKernel) {
    var items = ov.heaviest || [];
    if (!items.length) return null;
    var several = new Set(items.map(function (k) { return k.module; })).size > 1;
    return h("section", { class: "hs-card", id: "hs-heaviest" },
      h("h2", null, "Heaviest kernels"),
      h("p", { class: "hs-muted" }, "Total time over the profiled executions; click a kernel to open it."),
      barChart(items,
        function (k) {
          var text = (several ? shortName(k.module, 24) + " · " : "") + k.kernel;
          return { text: text, node: h("span", null, text, " ", chip(k.kind, "hs-kind")) };
        },
        function (k) { return k.total_us; },
        function (k) { return fmtUs(k.total_us) + (k.share !== null && k.share !== undefined ? "  " + fmtPct(k.share) : ""); },
        function (k) { openKernel(k.index, k.kernel); }));
  }

  function benchSection(bench) {
    if (!bench) return null;
    var sec = h("section", { class: "hs-card", id: "hs-bench" }, h("h2", null, "Eager vs XLA"));
    if (bench.error) {
      add(sec, h("p", { class: "hs-err" }, String(bench.error)));
      return sec;
    }
    var modes = Array.isArray(bench.modes) ? bench.modes : [];
    var facts = [bench.target, bench.framework, bench.device].filter(Boolean).map(String).join(" · ");
    if (facts) add(sec, h("p", { class: "hs-muted" }, facts));
    if (!modes.length) {
      add(sec, h("p", { class: "hs-muted" }, "bench.json holds no modes"));
      return sec;
    }
    var ok = modes.filter(function (m) { return typeof m.median_s === "number"; });
    add(sec, barChart(ok,
      function (m) { return { text: String(m.label || m.name) }; },
      function (m) { return m.median_s; },
      function (m) { return fmtS(m.median_s) + (typeof m.speedup === "number" ? "  ×" + m.speedup.toFixed(2) : ""); },
      null));
    var tbody = h("tbody");
    modes.forEach(function (m) {
      add(tbody, h("tr", null,
        h("td", null, String(m.label || m.name || "?"), m.name === bench.baseline ? h("span", { class: "hs-muted" }, " (baseline)") : null),
        h("td", { class: "hs-num" }, fmtS(m.first_call_s)),
        h("td", { class: "hs-num" }, fmtS(m.median_s)),
        h("td", { class: "hs-num" }, m.p10_s !== undefined ? fmtS(m.p10_s) + " – " + fmtS(m.p90_s) : "–"),
        h("td", { class: "hs-num" }, typeof m.speedup === "number" ? "×" + m.speedup.toFixed(2) : "–"),
        h("td", { class: "hs-num" }, typeof m.peak_memory_bytes === "number" ? fmtBytes(m.peak_memory_bytes) : "–"),
        h("td", { class: m.error ? "hs-err" : "hs-muted" }, m.error ? String(m.error) : (m.repeats ? fmtInt(m.repeats) + " calls" : ""))));
    });
    add(sec, h("table", { class: "hs-table" },
      h("thead", null, h("tr", null,
        ["mode", "first call", "median", "p10 – p90", "speed-up", "peak memory", ""].map(function (x, i) {
          return h("th", { class: i > 0 && i < 6 ? "hs-num" : null, scope: "col" }, x);
        }))), tbody));
    var notes = Array.isArray(bench.notes) ? bench.notes : [];
    if (notes.length) add(sec, h("ul", { class: "hs-notes" }, notes.map(function (n) { return h("li", null, String(n)); })));
    return sec;
  }

  // ---------------------------------------------------------------- one module

  function ModuleView(summary, section) {
    this.summary = summary;
    this.section = section;
    this.built = false;
    this.selected = null;
  }

  ModuleView.prototype.build = function () {
    if (this.built) return;
    this.built = true;
    var started = performance.now();
    var body = this.section.querySelector(".hs-mbody");
    clear(body);
    try {
      this.doc = readJson("hs-module-" + this.summary.index);
      this.render(body);
    } catch (e) {
      add(body, h("p", { class: "hs-err" }, "Could not build this module's view: " + String(e)));
      console.error(e);
    }
    this.section.dataset.ready = "1";
    this.section.dataset.buildMs = String(Math.round(performance.now() - started));
  };

  ModuleView.prototype.render = function (body) {
    var d = this.doc;
    var self = this;
    var a = d.after, b = d.before;
    var timing = d.timing || null;
    this.kernelTime = new Map();
    if (timing && Array.isArray(timing.kernels)) {
      timing.kernels.forEach(function (k) { self.kernelTime.set(k.name, k); });
    }
    this.byName = new Map();
    d.kernels.forEach(function (k, i) { k.index = i; self.byName.set(k.name, k); });
    this.costOf = new Map();
    if (d.cost) d.cost.kernels.forEach(function (c) { self.costOf.set(c.name, c); });
    this.roofOf = new Map();
    if (d.roofline) d.roofline.kernels.forEach(function (r) { self.roofOf.set(r.name, r); });
    this.opByName = new Map();
    d.provenance.forEach(function (p, i) { p.index = i; self.opByName.set(p.op, p); });

    // stats line
    var stats = h("div", { class: "hs-stats" });
    var facts = [
      ["instructions", arrow(b && b.instructions, a && a.instructions)],
      ["ops → kernels", arrow(b && b.ops, a && a.kernels)],
      ["launches / execution", launches(a)],
      ["ops per kernel", d.ops_per_kernel ? d.ops_per_kernel.toFixed(1) : "–"],
      ["ops alone", d.alone === null || d.alone === undefined ? "–" : fmtInt(d.alone)],
    ];
    if (timing) {
      var per = function (us) { return timing.executions && typeof us === "number" ? fmtUs(us / timing.executions) : "–"; };
      facts.push(["kernel time / execution", per(timing.kernel_us)]);
      if (typeof timing.busy_us === "number" && typeof timing.kernel_us === "number" &&
          timing.busy_us < timing.kernel_us * 0.995) {
        // kernels on several streams overlap: their sum exceeds the time they took
        facts.push(["busy / execution (kernels overlap)", per(timing.busy_us)]);
      }
      facts.push(["wall / execution", per(timing.total_us)]);
      facts.push(["executions profiled" + (timing.source ? " (" + timing.source + ")" : "") +
        (timing.cold ? ", a cold first run (it ran only as warm-up)" : ""), fmtInt(timing.executions)]);
      if (typeof timing.device_ops_per_execution === "number") {
        facts.push(["GPU operations / execution", fmtInt(timing.device_ops_per_execution)]);
      }
    }
    facts.forEach(function (f) { add(stats, h("div", { class: "hs-stat" }, h("b", null, f[1]), h("span", null, f[0]))); });
    add(body, stats);
    if (a) add(body, h("div", { class: "hs-kindsline" }, h("span", { class: "hs-muted" }, "kernels by kind "), kindsCell(a, 99)));
    if (d.error) add(body, h("p", { class: "hs-err" }, String(d.error)));
    if (a && a.loops && a.loops.some(function (l) { return l.trip_count === null; })) {
      add(body, h("p", { class: "hs-muted" }, "A while loop has no known trip count: its body is counted once."));
    }

    var main = h("div", { class: "hs-main" });
    this.aside = h("aside", { class: "hs-details", "aria-live": "polite" },
      h("p", { class: "hs-muted hs-pad" }, "Click a kernel in the diagram or the table to see its fused ops, source lines, time and HLO."));
    add(body, h("div", { class: "hs-grid" }, main, this.aside));

    // diagrams
    var dg = d.diagrams;
    if (dg) {
      var pick = function (from) {
        return function (k) { if (self.byName.has(k)) self.select(k, from); };
      };
      this.after = diagramPanel("after", "kernels after optimization", dg.after,
        a ? "no kernel diagram" : "no after-optimization dump", pick("after"));
      this.before = diagramPanel("before", "ops before optimization", dg.before,
        b ? "no op diagram" : "no before-optimization dump", pick("before"));
      // without a before dump (a single after file) the kernel diagram takes the width
      add(main, dg.before || !dg.after
        ? h("div", { class: "hs-diagrams" }, this.after.element, this.before.element)
        : h("div", { class: "hs-diagrams hs-one" }, this.after.element));
      if (this.after.pz) this.after.pz.home();
      if (this.before.pz) this.before.pz.home();
      if (dg.note) add(main, h("p", { class: "hs-muted" }, String(dg.note)));
    }

    // kernel table
    if (a) {
      var hasTime = this.kernelTime.size > 0;
      var timeOf = function (k) { var t = self.kernelTime.get(k.name); return t ? t.total_us : null; };
      var cols = [
        { label: "#", w: "46px", num: true, get: function (k) { return k.index; }, cell: function (k) { return String(k.index + 1); }, cls: "hs-idx" },
        { label: "kernel", w: "24%", get: function (k) { return k.name; }, cell: function (k) { return k.name; }, cls: "hs-kname" },
        { label: "kind", w: "13%", get: function (k) { return k.kind; }, cell: function (k) { return chip(k.kind, "hs-kind"); } },
      ];
      if (hasTime) {
        cols.push({ label: "time", w: "78px", num: true, get: timeOf, cell: function (k) { return fmtUs(timeOf(k)); }, title: "total time over the profiled executions" });
      }
      cols.push(
        { label: "launches", w: "76px", num: true, get: function (k) { return k.launches; }, cell: function (k) { return fmtInt(k.launches); } },
        { label: "ops", w: "52px", num: true, get: function (k) { return k.instructions; }, cell: function (k) { return fmtInt(k.instructions); }, title: "fused instructions" },
        { label: "bytes in", w: "84px", num: true, get: function (k) { return k.bytes_in; }, cell: function (k) { return fmtBytes(k.bytes_in); } },
        { label: "bytes out", w: "88px", num: true, get: function (k) { return k.bytes_out; }, cell: function (k) { return fmtBytes(k.bytes_out); } },
        { label: "source ops", get: function (k) { return k.source_ops.length; }, cell: function (k) { return kernelOps(k); } });
      this.ktable = new VTable({
        columns: cols, rows: d.kernels, height: 360,
        sortCol: hasTime ? 3 : 0, sortDesc: hasTime,
        keyOf: function (k) { return k.name; },
        onpick: function (k) { self.select(k.name, "table"); },
        search: function (k) { return [k.name, k.kind, k.shape, k.source_ops.join(" ")].join(" "); },
      });
      add(main, h("section", { class: "hs-sub", data: { part: "kernels" } },
        h("h3", null, "Kernels"),
        filterBox(this.ktable, "filter kernels: name, kind, shape, source op…", "filter kernels"),
        this.ktable.element));
    }

    // roofline: one dot per measured kernel
    if (d.roofline) add(main, HS_ROOFLINE.plot(d.roofline, function (name) { if (self.byName.has(name)) self.select(name, "roofline"); }, { h: h, fmtUs: fmtUs }));
    if (d.memory && d.memory.peak_bytes !== null) {
      var mem = d.memory, kinds2 = Object.keys(mem.by_kind).filter(function (k) { return mem.by_kind[k]; });
      var big = mem.largest.slice(0, 3).map(function (a) { return fmtBytes(a.size) + " " + a.kind + " (" + a.instructions.slice(0, 3).join(", ") + ")"; });
      add(main, h("p", { class: "hs-muted", data: { part: "memory" } }, "peak planned memory (XLA): " + fmtBytes(mem.peak_bytes) + " — " +
        kinds2.map(function (k) { return k + " " + fmtBytes(mem.by_kind[k]); }).join(", ") + "; largest: " + big.join("; ")));
    } else if (d.memory && d.memory.missing) {
      add(main, h("p", { class: "hs-muted", data: { part: "memory" } }, "planned memory: not in the dump (" + d.memory.missing + ")"));
    }

    // where did my op go
    if (d.provenance.length) {
      var kinds = {};
      d.kernels.forEach(function (k) { kinds[k.name] = k.kind; });
      this.otable = new VTable({
        columns: [
          { label: "source op", w: "24%", get: function (p) { return p.op; }, cell: function (p) { return p.op; } },
          { label: "type", w: "8%", get: function (p) { return p.type; }, cell: function (p) { return p.type || ""; } },
          { label: "status", w: "76px", get: function (p) { return p.status; }, cell: function (p) { return statusChip(p.status); } },
          { label: "kernel", w: "16%", get: function (p) { return p.kernels.join(","); }, cell: function (p) { return opKernels(p); }, cls: "hs-kname" },
          { label: "shares with", w: "92px", num: true, get: function (p) { return p.shares_with_count; }, cell: function (p) { return p.shares_with_count ? fmtInt(p.shares_with_count) + " ops" : ""; } },
          { label: "bytes", w: "84px", num: true, get: function (p) { return p.bytes; }, cell: function (p) { return fmtBytes(p.bytes); } },
          { label: "location", w: "14%", get: function (p) { return p.location; }, cell: function (p) { return p.location || ""; } },
          { label: "why", get: function (p) { return p.evidence; }, cell: function (p) { return p.evidence || ""; } },
        ],
        rows: d.provenance, height: 320,
        keyOf: function (p) { return p.op; },
        onpick: function (p) { if (p.kernels.length && self.byName.has(p.kernels[0])) self.select(p.kernels[0], "ops"); },
        search: function (p) { return [p.op, p.type, p.status, p.kernels.join(" "), p.location, p.evidence].join(" "); },
      });
      add(main, h("section", { class: "hs-sub", data: { part: "ops" } },
        h("h3", null, "Where did my op go?"),
        h("p", { class: "hs-muted" }, "Every source op: the kernel it fused into, or that it runs alone, or why it is gone. Search by op name, type, kernel or file."),
        filterBox(this.otable, "search ops: name, type, status, kernel, file…", "search ops"),
        this.otable.element));

      var alone = d.provenance.filter(function (p) { return p.status === "alone"; });
      var unfused = h("section", { class: "hs-sub", data: { part: "unfused" } }, h("h3", null, "Ops that did not fuse (" + fmtInt(alone.length) + ")"));
      if (alone.length) {
        var atable = new VTable({
          columns: [
            { label: "source op", w: "32%", get: function (p) { return p.op; }, cell: function (p) { return p.op; } },
            { label: "kernel", w: "26%", get: function (p) { return p.kernels.join(","); }, cell: function (p) { return p.kernels.map(function (k) { return k + (kinds[k] ? " [" + kinds[k] + "]" : ""); }).join(", "); }, cls: "hs-kname" },
            { label: "bytes", w: "84px", num: true, get: function (p) { return p.bytes; }, cell: function (p) { return fmtBytes(p.bytes); } },
            { label: "why", get: function (p) { return p.evidence; }, cell: function (p) { return p.evidence || "XLA gave no reason"; } },
          ],
          rows: alone, height: 240, sortCol: 2, sortDesc: true,
          keyOf: function (p) { return p.op; },
          onpick: function (p) { if (p.kernels.length && self.byName.has(p.kernels[0])) self.select(p.kernels[0], "ops"); },
          search: function (p) { return [p.op, p.kernels.join(" "), p.evidence].join(" "); },
        });
        add(unfused, atable.element);
      } else {
        add(unfused, h("p", { class: "hs-muted" }, "Every source op shares a kernel with others (or was removed)."));
      }
      add(main, unfused);
    }

    var files = d.files || {};
    var fl = [files.before, files.after].filter(Boolean);
    if (fl.length) add(main, h("p", { class: "hs-muted hs-files" }, "dump files: " + fl.join(" · ")));

    // paint the tables now that they are in the document (they measure their viewport)
    if (this.ktable) this.ktable.paint(true);
    if (this.otable) this.otable.paint(true);
  };

  ModuleView.prototype.select = function (name, from) {
    var k = this.byName.get(name);
    if (!k) return;
    this.selected = name;
    this.section.dataset.selected = name;
    if (this.ktable) this.ktable.select(name, from !== "table");
    this.highlight(name, from);
    this.showDetails(k);
  };

  ModuleView.prototype.highlight = function (name, from) {
    var hit = markNodes(this.after, name);
    if (hit && from !== "after") this.after.pz.reveal(hit);
    var first = markNodes(this.before, name);
    if (first && from !== "before") this.before.pz.reveal(first);
  };

  ModuleView.prototype.showDetails = function (k) {
    var self = this;
    var aside = clear(this.aside);
    var t = this.kernelTime.get(k.name);
    add(aside, h("h3", { class: "hs-kdname" }, k.name));
    add(aside, h("p", null, chip(k.kind, "hs-kind"), " ", h("span", { class: "hs-muted" }, k["class"] + (k.library ? " · library call" : ""))));
    var facts = [
      ["shape", k.shape],
      ["launches / execution", fmtInt(k.launches)],
      ["bytes in", fmtBytes(k.bytes_in)],
      ["bytes out", fmtBytes(k.bytes_out)],
      ["computation", k.computation],
    ];
    if (t) {
      facts.push(["time (total)", fmtUs(t.total_us)]);
      facts.push(["time / call", fmtUs(t.mean_us) + (t.calls ? " × " + fmtInt(t.calls) + " calls" : "")]);
      if (t.share !== undefined) facts.push(["share of kernel time", fmtPct(t.share)]);
    } else if (this.kernelTime.size) {
      facts.push(["time", "not seen in the profile"]);
    }
    var c = this.costOf.get(k.name), r = this.roofOf.get(k.name);
    if (c) {
      facts.push(["FLOPs / run", c.known ? HS_ROOFLINE.rate(c.flops, "FLOP") : "unknown (library call)"]);
      facts.push(["bytes read / written", fmtBytes(c.bytes_read) + " / " + fmtBytes(c.bytes_written)]);
      if (c.kept_bytes) facts.push(["kept out of memory", fmtBytes(c.kept_bytes)]);
    }
    if (r) {
      facts.push(["achieved", HS_ROOFLINE.rate(r.flops_per_s, "FLOP/s") + ", " + HS_ROOFLINE.rate(r.bandwidth, "B/s")]);
      facts.push(["roofline", r.bound + "-bound, " + (r.efficiency * 100).toFixed(1) + "% of roof (" + fmtUs(r.roof_us) + " on the roof)"]);
    }
    var dl = h("dl", { class: "hs-kv" });
    facts.forEach(function (f) { add(dl, [h("dt", null, f[0]), h("dd", null, String(f[1]))]); });
    add(aside, dl);

    // source ops and lines
    var ops = k.source_ops.map(function (n) { return self.opByName.get(n) || { op: n, status: "?", location: null }; });
    add(aside, h("h4", null, "Source ops (" + ops.length + ")"));
    if (!ops.length) add(aside, h("p", { class: "hs-muted" }, "The metadata names no source op."));
    var ul = h("ul", { class: "hs-srcops" });
    ops.slice(0, 200).forEach(function (p) {
      add(ul, h("li", null, h("span", { class: "hs-op" }, p.op), p.type ? h("span", { class: "hs-muted" }, " " + p.type) : null, " ", statusChip(p.status)));
    });
    if (ops.length > 200) add(ul, h("li", { class: "hs-muted" }, "… " + (ops.length - 200) + " more"));
    add(aside, ul);
    var lines = new Map();
    ops.forEach(function (p) { if (p.location) lines.set(p.location, (lines.get(p.location) || 0) + 1); });
    if (lines.size) {
      add(aside, h("h4", null, "Source lines"));
      var ll = h("ul", { class: "hs-lines" });
      Array.from(lines.entries()).sort(function (x, y) { return y[1] - x[1]; }).slice(0, 50).forEach(function (e) {
        add(ll, h("li", null, h("code", null, e[0]), e[1] > 1 ? h("span", { class: "hs-muted" }, " ×" + e[1]) : null));
      });
      add(aside, ll);
    }

    // fused instructions
    var fused = (this.doc.fused || {})[k.name] || [];
    add(aside, h("h4", null, "Fused instructions (" + fused.length + ")"));
    var ft = h("tbody");
    fused.slice(0, 300).forEach(function (f) {
      add(ft, h("tr", null, h("td", null, f[0]), h("td", { class: "hs-kname" }, f[1]), h("td", { class: "hs-shape" }, f[2])));
    });
    add(aside, h("table", { class: "hs-table hs-fused" }, ft));
    if (fused.length > 300) add(aside, h("p", { class: "hs-muted" }, "… " + (fused.length - 300) + " more"));

    // HLO
    var hlo = (this.doc.hlo || {})[k.name];
    if (hlo) {
      add(aside, h("h4", null, k.fused_computation || k.computation ? "HLO (metadata left out)" : "HLO"));
      add(aside, h("pre", { class: "hs-hlo" }, hlo));
    }
    this.aside.scrollTop = 0;
  };

  // ---------------------------------------------------------------- the page

  function moduleSection(m) {
    var t = m.timing;
    var meta = [m.key];
    if (m.after) meta.push(fmtInt(m.after.kernels) + " kernels");
    if (m.before && m.after) meta.push(fmtInt(m.before.instructions) + " → " + fmtInt(m.after.instructions) + " instructions");
    if (t && t.executions) meta.push(fmtUs(kernelTime(t)) + " kernel time / execution");
    return h("details", { class: "hs-module hs-card", id: "hs-m-" + m.index, data: { key: m.key } },
      h("summary", null, h("span", { class: "hs-mtitle", title: m.name }, shortName(m.name, 72)),
        h("span", { class: "hs-muted hs-mmeta" }, meta.join(" · "))),
      h("div", { class: "hs-mbody" }, h("p", { class: "hs-muted" }, "Loading…")));
  }

  function init() {
    var ov = readJson("hs-overview");
    var app = clear(document.getElementById("hs-app"));
    var views = [];
    function openModule(index, scroll) {
      var v = views[index];
      if (!v) return null;
      var outer = v.section.parentElement && v.section.parentElement.closest("details");
      if (outer && !outer.open) outer.open = true;
      if (!v.section.open) v.section.open = true; // the toggle event builds it
      v.build();
      if (scroll) v.section.scrollIntoView({ block: "start" });
      return v;
    }
    function openKernel(index, name) {
      var v = openModule(index, false);
      if (v) {
        v.select(name, "chart");
        v.section.scrollIntoView({ block: "start" });
      }
    }

    add(app, runHeader(ov));
    var main = ov.modules.filter(function (m) { return !m.trivial; });
    var trivial = ov.modules.filter(function (m) { return m.trivial; });
    var overview = h("section", { class: "hs-card", id: "hs-overview-card" }, h("h2", null, "Modules"));
    if (!ov.modules.length) add(overview, h("p", { class: "hs-muted" }, "This run holds no modules."));
    if (main.length) add(overview, modulesTable(main, ov.timed, openModule));
    if (trivial.length) {
      var names = trivial.map(function (m) { return shortName(m.name, 28); });
      var sum = 0;
      trivial.forEach(function (m) { sum += (m.after || m.before || {}).instructions || 0; });
      add(overview, h("details", { class: "hs-trivial" },
        h("summary", null, "+ " + trivial.length + " trivial helper modules (" +
          Array.from(new Set(names)).slice(0, 4).join(", ") + (new Set(names).size > 4 ? ", …" : "") + "), " +
          fmtInt(sum) + " instructions"),
        modulesTable(trivial, ov.timed, openModule)));
    }
    add(app, overview);
    add(app, heaviestSection(ov, openKernel));
    add(app, benchSection(ov.bench));

    var list = h("section", { id: "hs-modules" }, h("h2", { class: "hs-h2" }, "Modules in detail"));
    var folded = trivial.length
      ? h("details", { class: "hs-trivial hs-trivial-list" },
        h("summary", null, trivial.length + " trivial helper modules"))
      : null;
    ov.modules.forEach(function (m) {
      var sec = moduleSection(m);
      var view = new ModuleView(m, sec);
      views[m.index] = view;
      sec.addEventListener("toggle", function () { if (sec.open) view.build(); });
      add(m.trivial ? folded : list, sec);
    });
    add(list, folded);
    add(app, list);
    add(app, h("footer", { class: "hs-foot hs-muted" }, "made by hloscope · one self-contained file: no server, no network"));

    if (ov.open_first !== false && main.length) openModule(main[0].index, false);
    document.documentElement.dataset.ready = "1";
    // for measurements: ms since this script started, and since navigation started
    document.documentElement.dataset.readyMs = String(Math.round(performance.now() - t0));
    document.documentElement.dataset.readyAt = String(Math.round(performance.now()));
  }

  try {
    init();
  } catch (e) {
    var app = document.getElementById("hs-app");
    if (app) {
      clear(app);
      add(app, h("p", { class: "hs-err" }, "The report could not be built: " + String(e)));
    }
    document.documentElement.dataset.ready = "error";
    throw e;
  }
})();
