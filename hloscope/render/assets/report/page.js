/* hloscope HTML report: the page: a module's section, init (overview, then the first
 * module) and the error shown when the page cannot be built.
 */

  // ---------------------------------------------------------------- the page

  function moduleSection(m) {
    var t = m.timing;
    var meta = [shortName(m.key, 96)];
    if (m.recompiled) meta.push("#" + m.compilation + " of " + m.function + " (" + (m.inputs || []).join(", ") + ")");
    // the figures as every view prints them (render/figures.py)
    (m.cells || []).slice(0, 2).forEach(function (c) { if (c[1] !== "–→–") meta.push(c[0] + " " + c[1]); });
    var kt = figure(m, "kernel_time_per_execution");
    if (t && t.executions && kt) meta.push(kt.label + " " + kt.text);
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
    // a function's compilations are listed together, each with its index and shapes
    var recompiled = new Set((ov.compilations || []).map(function (c) { return c.function; }));
    ov.modules.forEach(function (m) { m.recompiled = recompiled.has(m.function); });
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
    add(app, compilationsSection(ov, openModule));
    add(app, torchXlaSection(ov, openModule));
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
