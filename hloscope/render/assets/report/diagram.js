/* hloscope HTML report: SVG diagrams: parsing and sanitising the embedded SVG, pan and
 * zoom (PanZoom), a diagram's panel, and marking the nodes of a picked kernel.
 */

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
