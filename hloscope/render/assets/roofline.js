/* hloscope HTML report: the roofline plot (loaded before report/*.js, same script block).
 *
 * Same contract as report/dom.js states: kernel names and figures reach the DOM as text
 * (textContent of SVG <title> and <text>, setAttribute on data-kernel), never as markup.
 */
var HS_ROOFLINE = (function () {
  "use strict";

  var SVGNS = "http://www.w3.org/2000/svg";
  function sv(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k]));
    return e;
  }

  function rate(x, unit) {
    var p = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < p.length; i++) if (x >= p[i][0]) return (x / p[i][0]).toPrecision(3) + " " + p[i][1] + unit;
    return x.toPrecision(3) + " " + unit;
  }

  /* Log-log roofline: x = FLOP/byte, y = achieved FLOP/s; the memory roof rises with
     slope 1 up to the ridge, the compute roof is flat. Kernels with no FLOPs are listed. */
  function plot(doc, onpick, lib) {
    var h = lib.h, fmtUs = lib.fmtUs;
    var W = 560, H = 300, L = 64, B = 34, T = 10, R = 12;
    var pts = doc.kernels.filter(function (k) { return k.flops > 0 && k.intensity > 0; });
    var top = Math.max(doc.peak_flops, doc.peak_flops_low || 0);
    var xs = pts.map(function (k) { return k.intensity; }).concat([top / doc.peak_bandwidth]);
    var ys = pts.map(function (k) { return k.flops_per_s; }).concat([doc.peak_flops]);
    var x0 = Math.floor(Math.log10(Math.min.apply(null, xs))) - 0.5, x1 = Math.ceil(Math.log10(Math.max.apply(null, xs))) + 0.5;
    var y0 = Math.floor(Math.log10(Math.min.apply(null, ys))) - 0.5, y1 = Math.log10(top) + 0.5;
    function X(v) { return L + (Math.log10(v) - x0) / (x1 - x0) * (W - L - R); }
    function Y(v) { return T + (y1 - Math.log10(v)) / (y1 - y0) * (H - T - B); }
    var svg = sv("svg", { viewBox: "0 0 " + W + " " + H, width: W, height: H, class: "hs-roofline", role: "img" });
    svg.appendChild(sv("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "hs-rl-frame" }));
    var xa = Math.pow(10, x0), xb = Math.pow(10, x1);
    [doc.peak_flops, doc.peak_flops_low].forEach(function (top, i) {
      if (!top) return;
      var xr = top / doc.peak_bandwidth;
      svg.appendChild(sv("polyline", { points: [X(xa), Y(xa * doc.peak_bandwidth), X(xr), Y(top), X(xb), Y(top)].join(" ").replace(/(\S+) (\S+)/g, "$1,$2"), class: i ? "hs-rl-roof hs-rl-low" : "hs-rl-roof" }));
    });
    for (var e = Math.ceil(x0); e <= x1; e++) { var tx = sv("text", { x: X(Math.pow(10, e)), y: H - 18, class: "hs-rl-tick" }); tx.textContent = String(Math.pow(10, e)); svg.appendChild(tx); }
    for (var f = Math.ceil(y0); f <= y1; f++) { var ty = sv("text", { x: L - 4, y: Y(Math.pow(10, f)) + 4, class: "hs-rl-tick hs-rl-y" }); ty.textContent = rate(Math.pow(10, f), "FLOP/s"); svg.appendChild(ty); }
    var lx = sv("text", { x: (L + W) / 2, y: H - 3, class: "hs-rl-tick" }); lx.textContent = "FLOP per byte moved"; svg.appendChild(lx);
    pts.forEach(function (k) {
      var c = sv("circle", { cx: X(k.intensity), cy: Y(k.flops_per_s), r: 5, class: "hs-rl-dot hs-rl-" + k.bound, tabindex: 0 });
      c.setAttribute("data-kernel", k.name);
      var tip = sv("title", {});
      tip.textContent = (lib.label ? lib.label(k.name) : k.name) + " (" + k.kind + "): " + fmtUs(k.time_us) + ", " + rate(k.flops_per_s, "FLOP/s") + ", " +
        rate(k.bandwidth, "B/s") + ", " + k.bound + "-bound, " + (k.efficiency * 100).toFixed(1) + "% of roof";
      c.appendChild(tip);
      c.addEventListener("click", function () { onpick(k.name); });
      c.addEventListener("keydown", function (ev) { if (ev.key === "Enter") onpick(k.name); });
      svg.appendChild(c);
    });
    var others = doc.kernels.length - pts.length;
    return h("section", { class: "hs-sub", data: { part: "roofline" } },
      h("h3", null, "Roofline"),
      h("p", { class: "hs-muted" }, doc.device + " (" + doc.source + "): " + rate(doc.peak_bandwidth, "B/s") + ", " +
        rate(doc.peak_flops, "FLOP/s") + (doc.peak_flops_low ? " f32, " + rate(doc.peak_flops_low, "FLOP/s") + " 16-bit (dashed)" : "") +
        ". One dot per measured kernel (collectives left out); hover for figures, click to open it." +
        (others ? " " + others + " kernels move data only (no FLOPs) and are not drawn." : "")),
      svg);
  }

  return { plot: plot, rate: rate };
})();
