/* hloscope HTML report: the virtual table (VTable: sortable, filterable, only the rows
 * in view in the DOM) and the filter box above one.
 */

  // ---------------------------------------------------------------- virtual table

  var ROW_H = 26; // px, fixed row height of virtual tables (matches report.css)

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
