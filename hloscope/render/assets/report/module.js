/* hloscope HTML report: one module's section (ModuleView): its kernel and op tables,
 * diagrams, and the details of a picked kernel, built when the section is opened.
 */

  // ---------------------------------------------------------------- one module

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

  // ---------------------------------------------------------------- passes

  // A kernel's line through the compiler passes, in a few words.
  function historyText(k) {
    if (!k || !k.history.length) return "an op no pass made into another kernel";
    return k.history.map(function (e) {
      var from = e.from && e.from.length ? (e.change === "renamed" ? " (was " + e.from[0] + ")" :
        " from " + e.from.slice(0, 4).join(", ") + (e.from.length > 4 ? ", +" + (e.from.length - 4) : "")) : "";
      return e.change + " by " + e.pass + " (#" + e.index + ")" + from;
    }).join("; ");
  }

  function withChange(now, before) {
    var cell = h("td", { class: "hs-num" }, fmtInt(now));
    if (before !== null && before !== undefined && now !== before) {
      var d = now - before;
      add(cell, h("span", { class: "hs-muted" }, " (" + (d > 0 ? "+" : "−") + fmtInt(Math.abs(d)) + ")"));
    }
    return cell;
  }

  // The story of `hloscope dump --passes`: the passes that changed the module, in the
  // order they ran, the counts after each, and where compile time went.
  function passesSection(p) {
    var keys = ["instructions", "fusions", "kernels", "launches"];
    var timed = p.passes.some(function (s) { return s.duration_s !== null; });
    var sec = h("section", { class: "hs-sub", data: { part: "passes" } },
      h("h3", null, "Passes: how the kernels came to be"),
      h("p", { class: "hs-muted" }, "Each compiler pass that changed the module, in the order XLA ran it, and the module after it (from the per-pass dumps of `hloscope dump --passes`). Click a kernel for the passes that made it."));
    p.notes.forEach(function (n) { add(sec, h("p", { class: "hs-muted" }, "note: " + n)); });
    var head = h("tr", null, h("th", null, "#"), h("th", null, "pipeline / pass"));
    keys.forEach(function (k) { add(head, h("th", null, k)); });
    if (timed) add(head, h("th", null, "time"));
    add(head, h("th", null, ""));
    var body = h("tbody");
    var prev = p.start;
    if (p.start) {
      var first = h("tr", null, h("td", null, ""), h("td", { class: "hs-muted" }, "(before optimization)"));
      keys.forEach(function (k) { add(first, h("td", { class: "hs-num" }, fmtInt(p.start[k]))); });
      if (timed) add(first, h("td", null, ""));
      add(first, h("td", null, ""));
      add(body, first);
    }
    p.passes.forEach(function (s) {
      var row = h("tr", { data: { pass: s.pass } }, h("td", { class: "hs-num hs-muted" }, String(s.index)),
        h("td", null, s.pipeline ? h("span", { class: "hs-muted" }, s.pipeline + " / ") : null, h("b", null, s.pass)));
      keys.forEach(function (k) { add(row, withChange(s[k], prev ? prev[k] : null)); });
      if (timed) add(row, h("td", { class: "hs-num" }, s.duration_s === null ? "–" : fmtUs(s.duration_s * 1e6)));
      add(row, h("td", { class: "hs-muted" }, s.note || ""));
      add(body, row);
      prev = s;
    });
    add(sec, h("table", { class: "hs-table hs-passes" }, h("thead", null, head), body));
    var made = {};
    p.kernels.forEach(function (k) { var by = k.first_pass || ""; made[by] = (made[by] || 0) + 1; });
    var parts = Object.keys(made).sort(function (a, b) { return made[b] - made[a]; }).map(function (by) {
      return fmtInt(made[by]) + (by ? " by " + by : " from the start");
    });
    add(sec, h("p", null, h("b", null, "kernels after optimization: "), parts.join(", ") || "none"));
    var never = p.ops.filter(function (o) { return o.left_pass === null; }).length;
    if (p.ops.length) {
      add(sec, h("p", null, h("b", null, "ops that run alone: "), fmtInt(never) + " never shared a kernel, " +
        fmtInt(p.ops.length - never) + " left one" + (p.ops.length > never ? " (" + p.ops.filter(function (o) {
          return o.left_pass !== null;
        }).slice(0, 5).map(function (o) { return o.op + " at " + o.left_pass; }).join("; ") + ")" : "")));
    }
    if (p.slowest.length) {
      var tb = h("tbody");
      p.slowest.forEach(function (t) {
        add(tb, h("tr", null, h("td", null, t.pass), h("td", { class: "hs-num" }, fmtUs(t.seconds * 1e6)),
          h("td", { class: "hs-num" }, p.seconds ? fmtPct(t.seconds / p.seconds) : "–"), h("td", { class: "hs-num" }, fmtInt(t.runs))));
      });
      add(sec, h("h4", null, "Where compile time goes: " + fmtUs(p.seconds * 1e6) + " in passes (XLA's pass timers)"));
      add(sec, h("table", { class: "hs-table hs-slowest" },
        h("thead", null, h("tr", null, h("th", null, "pass"), h("th", null, "time"), h("th", null, "share"), h("th", null, "runs"))), tb));
    }
    return sec;
  }

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

    // stats line: the module's figures exactly as every view prints them (render/figures.py)
    var stats = h("div", { class: "hs-stats" });
    var facts = (d.figures || []).map(function (f) { return [f.label, f.text, f.name]; });
    if (timing) {
      if (typeof timing.busy_us === "number" && typeof timing.kernel_us === "number" &&
          timing.busy_us < timing.kernel_us * 0.995 && timing.executions) {
        // kernels on several streams overlap: their sum exceeds the time they took
        facts.push(["busy per execution (kernels overlap)", fmtUs(timing.busy_us / timing.executions)]);
      }
      var several = timing.device_count > 1;
      if (timing.source || timing.cold) {
        facts.push(["profile" + (several ? ", per device" : ""), (timing.source || "") +
          (timing.cold ? " (a cold first run: it ran only as warm-up)" : "")]);
      }
      if (several) {
        // figures are one device's, the mean over the devices that ran the module
        facts.push(["devices (times per device)", fmtInt(timing.device_count)]);
        if (timing.spread) {
          facts.push(["slowest device / median (" + timing.spread.slowest + ")",
            timing.spread.ratio.toFixed(2) + "×"]);
        }
      }
      if (typeof timing.device_ops_per_execution === "number") {
        facts.push(["GPU operations per execution", fmtInt(timing.device_ops_per_execution)]);
      }
    }
    facts.forEach(function (f) { add(stats, h("div", { class: "hs-stat", data: { figure: f[2] || "" } }, h("b", null, String(f[1])), h("span", null, f[0]))); });
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
        cols.push({ label: "total time", w: "84px", num: true, get: timeOf, cell: function (k) { return fmtUs(timeOf(k)); }, title: "total time over the " + (timing.executions || "") + " profiled executions" });
      }
      cols.push(
        { label: "launches", w: "76px", num: true, get: function (k) { return k.launches; }, cell: function (k) { return fmtInt(k.launches); }, title: "launches per execution" },
        { label: "HLO ops", w: "64px", num: true, get: function (k) { return k.instructions; }, cell: function (k) { return fmtInt(k.instructions); }, title: "the HLO ops (instructions) it holds" },
        { label: "bytes in", w: "84px", num: true, get: function (k) { return k.bytes_in; }, cell: function (k) { return fmtBytes(k.bytes_in); } },
        { label: "bytes out", w: "88px", num: true, get: function (k) { return k.bytes_out; }, cell: function (k) { return fmtBytes(k.bytes_out); } },
        { label: "ops", get: function (k) { return k.source_ops.length; }, cell: function (k) { return kernelOps(k); }, title: "the source ops whose work it does" });
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
    var holds = d.holds || {};
    var label = function (name) { return holds[name] ? name + " · " + holds[name] : name; };
    if (d.roofline) add(main, HS_ROOFLINE.plot(d.roofline, function (name) { if (self.byName.has(name)) self.select(name, "roofline"); }, { h: h, fmtUs: fmtUs, label: label }));
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

    this.historyOf = new Map();
    if (d.passes) {
      d.passes.kernels.forEach(function (k) { self.historyOf.set(k.name, k); });
      add(main, passesSection(d.passes));
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
      ["launches per execution", fmtInt(k.launches)],
      ["bytes in", fmtBytes(k.bytes_in)],
      ["bytes out", fmtBytes(k.bytes_out)],
      ["computation", k.computation],
    ];
    if (t) {
      facts.push(["total time over the profiled executions", fmtUs(t.total_us)]);
      facts.push(["time per call", fmtUs(t.mean_us) + (t.calls ? " × " + fmtInt(t.calls) + " calls" : "")]);
      if (t.share !== undefined) facts.push(["share of kernel time", fmtPct(t.share)]);
    } else if (this.kernelTime.size) {
      facts.push(["time", "not seen in the profile"]);
    }
    var c = this.costOf.get(k.name), r = this.roofOf.get(k.name);
    if (c) {
      facts.push(["FLOPs per call", c.known ? HS_ROOFLINE.rate(c.flops, "FLOP") : "unknown (library call)"]);
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

    // the passes that made it (hloscope dump --passes)
    if (this.doc.passes) {
      var hk = this.historyOf.get(k.name);
      add(aside, h("h4", null, "History (compiler passes)"));
      add(aside, h("p", { class: "hs-history" }, historyText(hk)));
    }

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
