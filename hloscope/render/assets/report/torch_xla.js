/* hloscope HTML report: a PyTorch/XLA run's graphs: how many times each ran, the line
 * whose sync compiled it, its modules (click one to open it), and torch_xla's records
 * (ops that ran on the CPU, values read back). Recompiles are the Compilations card's.
 */

  // ---------------------------------------------------------------- torch_xla

  function torchXlaSection(ov, openModule) {
    var t = ov.torch_xla;
    if (!t) return null;
    var sec = h("section", { class: "hs-card", id: "hs-torch-xla" }, h("h2", null, "PyTorch/XLA graphs"));
    add(sec, h("p", null, String(t.headline)));
    var graphs = t.graphs || [];
    if (graphs.length) {
      var tbody = h("tbody");
      graphs.forEach(function (g) {
        var mods = h("td");
        (g.modules || []).forEach(function (m, i) {
          if (i) add(mods, ", ");
          add(mods, typeof m.index === "number"
            ? h("a", { href: "#hs-m-" + m.index, onclick: function (ev) { ev.preventDefault(); openModule(m.index, true); } }, String(m.key))
            : String(m.key));
        });
        add(tbody, h("tr", null,
          h("td", { class: "hs-num" }, typeof g.executions === "number" ? fmtInt(g.executions) + "×" : "–"),
          mods,
          h("td", null, String(g.function)),
          h("td", { class: "hs-muted" }, g.trigger ? String(g.trigger) : "–")));
      });
      add(sec, h("table", { class: "hs-table hs-torch-graphs" },
        h("thead", null, h("tr", null, ["ran", "modules", "function", "compiled at"].map(function (x, i) {
          return h("th", { class: i === 0 ? "hs-num" : null, scope: "col" }, x);
        }))), tbody));
    }
    var notes = t.notes || [];
    if (notes.length) add(sec, h("ul", { class: "hs-notes" }, notes.map(function (n) { return h("li", null, String(n)); })));
    return sec;
  }
