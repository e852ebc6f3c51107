/* hloscope HTML report: the overview: the run's header, the modules table, the heaviest
 * kernels chart and the benchmark section.
 */

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
      ["compiling", typeof run.compile_s === "number" ? fmtS(run.compile_s) +
        (typeof run.wall_time_s === "number" && run.wall_time_s > 0 ? " (" + fmtPct(run.compile_s / run.wall_time_s) + " of the wall time)" : "") : null],
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
    // a run that failed says so before anything else it shows
    var outcome = run.outcome ? h("p", { class: "hs-err hs-outcome", role: "alert" }, "✗ " + String(run.outcome)) : null;
    return h("header", { class: "hs-head" },
      h("h1", null, h("span", { class: "hs-logo" }, "hloscope"), " report"),
      outcome,
      h("p", { class: "hs-path" }, String(run.path || "")),
      dl);
  }

  /* Each function compiled more than once: its headline, its compilations with their
   * shapes (click one to open it), those that fuse differently, what the framework said,
   * the advice; then the run's compile time against its wall time. */
  function compilationsSection(ov, openModule) {
    var items = (ov.compilations || []).filter(function (c) { return !c.trivial; });
    var cold = ov.run && ov.run.cold_start;
    if (!items.length && !cold) return null;
    var sec = h("section", { class: "hs-card", id: "hs-compilations" }, h("h2", null, "Compilations"));
    items.forEach(function (c) {
      add(sec, h("h3", { class: "hs-ctitle" }, String(c.headline)));
      var tbody = h("tbody");
      (c.variants || []).forEach(function (v) {
        var name = "#" + v.compilation;
        var link = typeof v.index === "number"
          ? h("a", { href: "#hs-m-" + v.index, onclick: function (ev) { ev.preventDefault(); openModule(v.index, true); } }, name)
          : name;
        add(tbody, h("tr", { data: { key: v.key } },
          h("td", null, link),
          h("td", { class: "hs-shape" }, (v.inputs || []).join(", ") || "?"),
          h("td", { class: "hs-shape" }, (v.outputs || []).join(", ") || "?"),
          h("td", { class: "hs-num" }, v.kernels === null || v.kernels === undefined ? "–" : fmtInt(v.kernels)),
          h("td", { class: "hs-num" }, typeof v.compile_s === "number" ? fmtS(v.compile_s) : "–"),
          h("td", { class: "hs-muted" }, String(v.key))));
      });
      add(sec, h("table", { class: "hs-table hs-variants" },
        h("thead", null, h("tr", null, ["", "inputs", "outputs", "kernels", "compile", "module"].map(function (x, i) {
          return h("th", { class: i === 3 || i === 4 ? "hs-num" : null, scope: "col" }, x);
        }))), tbody));
      var notes = (c.differs || []).concat(c.said || []);
      if (notes.length) add(sec, h("ul", { class: "hs-notes" }, notes.map(function (n) { return h("li", null, String(n)); })));
      add(sec, h("p", null, h("strong", null, "advice: "), String(c.advice)));
    });
    if (cold) add(sec, h("p", { class: "hs-muted" }, String(cold)));
    return sec;
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

  /* A module's figure by name ({label, text}), as the Python side printed it. */
  function figure(m, name) {
    var found = (m.figures || []).filter(function (f) { return f.name === name; });
    return found.length ? found[0] : null;
  }

  /* The modules table: the figures' cells exactly as the terminal report prints them
     (render/figures.py), then the kinds and, when profiled, the kernel time. */
  function modulesTable(rows, timed, openModule) {
    var cellHeads = rows.length && rows[0].cells ? rows[0].cells.map(function (c) { return c[0]; }) : [];
    var head = ["module"].concat(cellHeads, ["kernels by kind"]);
    if (timed) head.push("kernel time per execution");
    var tbody = h("tbody");
    rows.forEach(function (m) {
      var a = m.after;
      var cells = [
        h("td", { class: "hs-mname" },
          h("a", { href: "#hs-m-" + m.index, title: m.name, onclick: function (ev) { ev.preventDefault(); openModule(m.index, true); } },
            shortName(m.name, 56)),
          m.recompiled ? h("span", { class: "hs-muted", title: (m.inputs || []).join(", ") }, " #" + m.compilation + " " + (m.inputs || []).join(", ")) : null,
          m.error ? h("span", { class: "hs-err", title: m.error }, " ⚠") : null),
      ];
      (m.cells || []).forEach(function (c) { cells.push(h("td", { class: "hs-num", data: { figure: c[0] } }, String(c[1]))); });
      cells.push(h("td", null, kindsCell(a, 4)));
      if (timed) {
        var kt = figure(m, "kernel_time_per_execution");
        cells.push(h("td", { class: "hs-num" }, kt ? String(kt.text) : "–"));
      }
      add(tbody, h("tr", { data: { key: m.key } }, cells));
    });
    var kindsAt = 1 + cellHeads.length;
    return h("table", { class: "hs-table hs-modules" },
      h("thead", null, h("tr", null, head.map(function (x, i) {
        return h("th", { class: i && i !== kindsAt ? "hs-num" : null, scope: "col" }, x);
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
          var text = (several ? shortName(k.module, 24) + " · " : "") + k.kernel + (k.holds ? " · " + k.holds : "");
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
        h("td", { class: "hs-num" }, typeof m.compile_s === "number" ? fmtS(m.compile_s) : "–"),
        h("td", { class: "hs-num" }, fmtS(m.median_s)),
        h("td", { class: "hs-num" }, m.p10_s !== undefined ? fmtS(m.p10_s) + " – " + fmtS(m.p90_s) : "–"),
        h("td", { class: "hs-num" }, typeof m.speedup === "number" ? "×" + m.speedup.toFixed(2) : "–"),
        h("td", { class: "hs-num" }, typeof m.peak_memory_bytes === "number" ? fmtBytes(m.peak_memory_bytes) : "–"),
        h("td", { class: m.error ? "hs-err" : "hs-muted" }, m.error ? String(m.error) : (m.repeats ? fmtInt(m.repeats) + " calls" : ""))));
    });
    add(sec, h("table", { class: "hs-table" },
      h("thead", null, h("tr", null,
        ["mode", "first call", "compile", "median", "p10 – p90", "speed-up", "peak memory", ""].map(function (x, i) {
          return h("th", { class: i > 0 && i < 7 ? "hs-num" : null, scope: "col" }, x);
        }))), tbody));
    var notes = Array.isArray(bench.notes) ? bench.notes : [];
    if (notes.length) add(sec, h("ul", { class: "hs-notes" }, notes.map(function (n) { return h("li", null, String(n)); })));
    return sec;
  }
