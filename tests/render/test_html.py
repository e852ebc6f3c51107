"""The HTML report without a browser: embedding, sanitising, page data, CLI, notebook.

What the page does when it runs is tested in a real browser in tests/browser/.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import hloscope
from hloscope import notebook
from hloscope.cli import app
from hloscope.errors import DocumentError, MissingDependencyError, UsageError
from hloscope.frameworks import Framework
from hloscope.inspection import BENCH_FILE, inspect_run, read_bench
from hloscope.render.diagram import SIDES
from hloscope.render.display import kernel_html
from hloscope.render.html import (
    Diagram,
    Diagrams,
    Embedded,
    embed_chunks,
    embed_json,
    iframe_html,
    page_data,
    report_html,
    report_page,
    sanitize_svg,
    spill_folder,
    write_html,
)
from hloscope.runs import load_run
from hloscope.timing.bench import BenchResult
from tests.conftest import DATA
from tests.render.xss_probe import NAME as XSS_NAME
from tests.render.xss_probe import PAYLOADS, make_xss_run

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz `dot` is not installed (make system-deps)"
)


def _blocks(page: str) -> dict[str, str]:
    """The JSON data blocks of a page by id."""
    return dict(
        re.findall(r'<script type="application/json" id="([\w-]+)">(.*?)</script>', page, re.S)
    )


def _code_blocks(page: str) -> tuple[str, str]:
    """The page's one inline script and one inline style."""
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert len(scripts) == 1 and len(styles) == 1
    return scripts[0], styles[0]


def _sha(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


# --- embedding --------------------------------------------------------------------------


def test_embed_json_cannot_end_the_script_block_and_round_trips() -> None:
    doc = {"a": "</script><script>x()</script>", "b": "<!-- & -->", "c": "\u2028\u2029é"}
    text = embed_json(doc)
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    assert "é" in text  # non-ASCII stays readable
    assert json.loads(text) == doc
    # each unsafe character as its \uXXXX escape, and nothing else changed
    compact = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    escaped = re.sub("[<>&\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", compact)
    assert text == escaped


def test_embed_json_writes_nan_as_null() -> None:
    assert json.loads(embed_json({"t": float("nan"), "u": [float("inf"), 1.5]})) == {
        "t": None,
        "u": [None, 1.5],
    }
    # other mappings are written as dicts are, whether or not the document holds a NaN
    from types import MappingProxyType

    plain = {"m": {"a": (1.0, "<")}, "n": [2]}
    proxied = {"m": MappingProxyType({"a": (1.0, "<")}), "n": [2]}
    assert embed_json(proxied) == embed_json(plain) == '{"m":{"a":[1.0,"\\u003c"]},"n":[2]}'
    assert embed_json(proxied | {"t": math.nan}) == embed_json(plain | {"t": None})


def test_an_embedded_dict_is_written_as_given_and_read_back() -> None:
    """`Embedded` (what a worker sends of a big module's page, `page_after`) is written
    as the dict it holds would be, and reads back, pickled too, as that dict."""
    import pickle

    doc = {
        "fusion.1<": [["add", "add.2", "f32[2]{0}"], ["exp", "e", "f32[]"]],
        "k": "ROOT x = f32[] add(a, b) /* </script><!-- & \u2028é */",
        "empty": {},
    }
    embedded = Embedded.of(doc)
    assert embedded.text == embed_json(doc)
    page = {"key": "m", "fused": embedded, "after": [1, 2]}
    for depth in range(4):
        assert "".join(embed_chunks(page, depth)) == embed_json(page | {"fused": doc})
    back = pickle.loads(pickle.dumps(embedded))
    assert type(back) is Embedded and back.text == embedded.text
    assert back == doc and doc == back and dict(back) == doc and len(back) == 3
    assert back["fusion.1<"] == doc["fusion.1<"] and "missing" not in back


def test_a_spilled_dict_is_written_as_given_a_batch_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Embedded.spilled` (a worker's part of a big module's page, `page_after` with a
    spill folder) writes the text `Embedded.of` holds, a batch of items at a time, into
    a file that the page copies in pieces; whole multibyte characters in each piece,
    and it pickles as its file, not its text."""
    import pickle

    from hloscope.render import html

    items = [(f"fusion.{i}<", [["add", f"a.{i}", "f32[2]{0}"]]) for i in range(2500)]
    items += [("k", "ROOT x = f32[] add(a, b) /* </script><!-- & \u2028é😀 */" * 40), ("e", {})]
    items += [("nan", [1.0, math.nan])]  # written as `embed_json` writes it: null
    embedded = Embedded.spilled(iter(items), tmp_path)
    assert embedded.path is not None and embedded.path.parent == tmp_path
    assert embedded.text == Embedded.of(dict(items)).text == embed_json(dict(items))
    monkeypatch.setattr(html, "_SPILL_CHUNK", 7)  # read back in small pieces
    pieces = list(embedded.chunks())
    assert len(pieces) > 1 and "".join(pieces) == embedded.text
    page = {"key": "m", "hlo": embedded}
    assert "".join(embed_chunks(page)) == embed_json({"key": "m", "hlo": dict(items)})
    sent = pickle.dumps(embedded)
    assert len(sent) < 1000  # its file's name, not its 400 kB
    back = pickle.loads(sent)
    assert back.path == embedded.path and dict(back) == dict(items) | {"nan": [1.0, None]}
    empty = Embedded.spilled(iter(()), tmp_path)
    assert empty.text == "{}" and dict(empty) == {}


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_kernels_sharing_a_name_or_a_folder_gone_are_not_spilled(tmp_path: Path) -> None:
    """Two kernels of one name (a fusion in the entry and one in a loop's body, which
    the parser allows): `page_after` keeps their part in memory, the last one's text for
    the name as the page's dict has it, and spills nothing. So it does when the folder
    cannot be written to (here, it is gone)."""
    from hloscope.analysis.fusion import analyze_module
    from hloscope.analysis.report import ModuleReport
    from hloscope.hlo.parser import parse_module
    from hloscope.render.html import _after_extras, page_after

    text = """HloModule dup

%fc (p: f32[2]) -> f32[2] {
  %p = f32[2]{0} parameter(0)
  ROOT %n = f32[2]{0} negate(%p)
}

%body (t: f32[2]) -> f32[2] {
  %t = f32[2]{0} parameter(0)
  ROOT %f = f32[2]{0} fusion(%t), kind=kLoop, calls=%fc
}

%cond (c: f32[2]) -> pred[] {
  %c = f32[2]{0} parameter(0)
  ROOT %k = pred[] constant(false)
}

ENTRY %e (a: f32[2]) -> f32[2] {
  %a = f32[2]{0} parameter(0)
  %f = f32[2]{0} fusion(%a), kind=kLoop, calls=%fc
  ROOT %w = f32[2]{0} while(%f), condition=%cond, body=%body
}
"""
    module = parse_module(text)
    analysis = analyze_module(module)
    assert [k.name for k in analysis.kernels].count("f") == 2
    m = ModuleReport("dup", "dup", None, "cpu", False, None, analysis, None, "", None, module)
    extras, _ = page_after(m, spill=tmp_path)
    assert all(type(e) is Embedded and e.path is None for e in extras.values())
    assert {key: dict(e) for key, e in extras.items()} == _after_extras(m)
    assert list(tmp_path.iterdir()) == []
    module = parse_module(text.replace("%f = f32[2]{0} fusion(%t)", "%g = f32[2]{0} fusion(%t)"))
    analysis = analyze_module(module)
    m = ModuleReport("one", "one", None, "cpu", False, None, analysis, None, "", None, module)
    extras, _ = page_after(m, spill=tmp_path / "gone")
    assert all(type(e) is Embedded and e.path is None for e in extras.values())
    assert {key: dict(e) for key, e in extras.items()} == _after_extras(m)
    assert [k.name for k in analysis.kernels] == ["f", "g"]
    spilled, _ = page_after(m, spill=tmp_path)
    assert all(e.path is not None and dict(e) == _after_extras(m)[k] for k, e in spilled.items())


def test_a_page_spill_folder_is_made_beside_the_page_and_removed(tmp_path: Path) -> None:
    """`spill_folder`: a hidden folder beside the page while the block runs, gone (with
    what was written there) after it, even when the block raises; none where the page's
    folder is missing (writing the page then says why)."""
    page = tmp_path / "out" / "report.html"
    with spill_folder(page) as folder:
        assert folder is None
    page.parent.mkdir()
    with pytest.raises(RuntimeError), spill_folder(page) as folder:
        assert folder is not None and folder.parent == page.parent
        Embedded.spilled(iter([("a", 1)]), folder)
        raise RuntimeError
    assert list(page.parent.iterdir()) == []


def test_an_array_of_records_is_embedded_a_batch_at_a_time() -> None:
    """The page's provenance (`Records`, as `report --json` writes it) is embedded as it
    is made, 4,096 objects at a time, not made whole first."""
    from hloscope.render.json_stream import Fields, Records

    rows = Records(lambda: range(10_000), lambda r: {"r": r}, lambda r, _: f'{{"r":{r}}}')
    pieces = list(embed_chunks(Fields(provenance=rows), 2))
    assert len(pieces) == 1 + 3 + 2  # the key, three batches, the array's and dict's ends
    assert "".join(pieces) == embed_json({"provenance": [{"r": r} for r in range(10_000)]})


def test_embed_chunks_join_to_embed_json() -> None:
    """The page is written in pieces (`embed_chunks`, dicts entry by entry, arrays made
    as they are written a batch at a time): joined they are `embed_json` of the whole,
    on random documents with NaN, other mappings, non-string keys, empty and nested
    containers, stand-ins (`Items`, `Fields`) and characters to escape."""
    import random
    from types import MappingProxyType

    from hloscope.render.html import _embed_items
    from hloscope.render.json_stream import Fields, Items, Records, Value, built

    rng = random.Random(27)
    leaves = [0, -1, 2.5, math.nan, math.inf, None, True, "", "</script>", "é\u2028&", "x"]

    def doc(depth: int) -> object:
        roll = rng.random()
        if depth > 3 or roll < 0.3:
            return rng.choice(leaves)
        items = {rng.choice(["a", "b", "<k>", "ü", "c d"]): doc(depth + 1) for _ in range(3)}
        if roll < 0.6:
            return items
        if roll < 0.7:
            return MappingProxyType(items)
        if roll < 0.8:
            return {1: doc(depth + 1), "1": 2} if rng.random() < 0.5 else {}
        return [doc(depth + 1) for _ in range(rng.randrange(3))]

    def streamed(depth: int) -> object:  # stand-ins hold stand-ins or plain values
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return doc(depth)
        if roll < 0.7:
            return Fields({rng.choice(["a", "<k>", "ü"]): streamed(depth + 1) for _ in range(3)})
        if roll < 0.75:  # found when it is reached
            inner = streamed(depth + 1)
            return Value(lambda: inner)
        listed = [streamed(depth + 1) for _ in range(rng.randrange(4))]
        if roll < 0.85:  # its compact text as `Records` says (NaN and other mappings fail)
            return Records(lambda: listed, built, lambda row, _: _strict(built(row)))
        return Items(lambda: iter(listed))

    for _ in range(500):
        d = streamed(0)
        for depth in range(4):
            assert "".join(embed_chunks(d, depth)) == embed_json(built(d))
        items = [streamed(1) for _ in range(rng.randrange(6))]
        for batch in (1, 2, 4096):
            whole = embed_json([built(item) for item in items])
            assert "".join(_embed_items(iter(items), batch)) == whole


def test_a_dict_of_short_strings_is_one_piece_and_long_ones_are_not() -> None:
    """Each kernel's words (44k on a 153 MB module) are written at once, not as a piece
    per key and value; strings long in all (kernels' HLO) still go entry by entry."""
    from hloscope.render.html import _SPILL_CHUNK

    words = {f"fusion.{i}": f"layer{i % 7}/{{add,mul}} +{i % 3}</script>" for i in range(44_640)}
    pieces = list(embed_chunks({"holds": words}))
    assert "".join(pieces) == embed_json({"holds": words})
    assert len(pieces) == 3  # `{"holds":`, the words, `}`
    hlo = {"a": "x" * (_SPILL_CHUNK // 2), "b": "y" * (_SPILL_CHUNK // 2 + 1), "c": "z"}
    pieces = list(embed_chunks({"hlo": hlo}))
    assert "".join(pieces) == embed_json({"hlo": hlo}) and len(pieces) > 3
    assert list(embed_chunks({"n": {"a": 1}})) != [embed_json({"n": {"a": 1}})]


def _strict(doc: object) -> str:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def test_the_pages_kernels_and_provenance_are_made_as_it_is_written(tmp_path: Path) -> None:
    """A module's kernels and provenance are held by the page only as it writes them
    (`Items`, not lists of dicts made before the diagrams are drawn), and written as
    `page_data`'s whole documents."""
    from hloscope.render.html import _page, _page_data
    from hloscope.render.json_stream import Items

    inspection = inspect_run(DATA / "jax_mlp")
    [streamed, *_] = _page_data(inspection, None, None)["modules"]
    assert isinstance(streamed["provenance"], Items) and isinstance(streamed["kernels"], Items)
    written = write_html(inspection, tmp_path / "r.html", diagrams=False).read_text()
    data = page_data(inspection)
    assert data["modules"][0]["provenance"] and type(data["modules"][0]["provenance"]) is list
    data["overview"]["open_first"] = True
    assert written == "".join(_page(data, "hloscope report · jax_mlp"))


def test_write_html_writes_the_page_report_html_makes(tmp_path: Path) -> None:
    inspection = inspect_run(DATA / "jax_mlp")
    out = write_html(inspection, tmp_path / "r.html", diagrams=False)
    assert out.read_text(encoding="utf-8") == report_html(inspection, diagrams=False)


def test_sanitize_svg_keeps_drawing_and_drops_code() -> None:
    svg = (
        '<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">'
        '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
        'viewBox="0 0 10 10" onload="evil()">'
        "<script>evil()</script><foreignObject><div>x</div></foreignObject>"
        '<g id="k/a" class="node" onclick="evil()" style="fill:red"><title>k/a</title>'
        '<a xlink:href="javascript:evil()" xlink:title="tip &lt;b&gt;">'
        '<text x="1" y="2">&lt;script&gt; é</text></a>'
        '<a xlink:href="#frag"><rect width="1" height="1"/></a></g></svg>'
    )
    out = sanitize_svg(svg)
    for gone in ("script>", "onload", "onclick", "foreignObject", "style=", "javascript"):
        assert gone not in out
    assert out.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    assert 'id="k/a"' in out and 'class="node"' in out
    assert "&lt;script&gt; é" in out  # text stays text
    assert 'xlink:href="#frag"' in out and 'xlink:title="tip &lt;b&gt;"' in out
    assert sanitize_svg("<html><script>evil()</script></html>") == ""
    assert sanitize_svg("not xml <") == ""


def test_kernel_hlo_is_printed_from_the_parsed_module() -> None:
    run = load_run(DATA / "tf_dense_relu")
    module = run.modules[0].load_after()
    assert module is not None
    page = page_data(inspect_run(run))
    hlo = page["modules"][0]["hlo"]
    fused = next(iter(module.fused_computations))
    kernel, text = next((k, t) for k, t in hlo.items() if f"%{fused} (" in t)
    first = text.splitlines()[0]
    assert first.removeprefix("ROOT ").startswith(f"%{kernel} = ")  # its own line first
    assert "maximum(" in text and "metadata=" not in text
    # the dump file's lines, less their metadata
    assert module.path is not None
    dumped = Path(module.path).read_text(encoding="utf-8")
    assert all(line.strip() in dumped for line in text.splitlines()[1:-1] if "=" in line)


def test_a_kernels_hlo_lists_its_nested_fusions_depth_first_once_each() -> None:
    from hloscope.hlo.parser import parse_module
    from hloscope.render.html import _nested_fusions

    fused = "\n".join(
        f"%{name} (p: f32[4]) -> f32[4] {{\n  %p = f32[4]{{0}} parameter(0)\n{body}}}\n"
        for name, body in [
            ("leaf", "  ROOT %n = f32[4]{0} negate(%p)\n"),
            ("mid", "  ROOT %m = f32[4]{0} fusion(%p), kind=kLoop, calls=%leaf\n"),
            (
                "top",
                "  %a = f32[4]{0} fusion(%p), kind=kLoop, calls=%mid\n"
                "  %b = f32[4]{0} fusion(%a), kind=kLoop, calls=%other\n"
                "  ROOT %c = f32[4]{0} fusion(%b), kind=kLoop, calls=%leaf\n",
            ),
            ("other", "  ROOT %o = f32[4]{0} exponential(%p)\n"),
        ]
    )
    module = parse_module(
        f"HloModule m\n\n{fused}\nENTRY %e (x: f32[4]) -> f32[4] {{\n"
        "  %x = f32[4]{0} parameter(0)\n"
        "  ROOT %f = f32[4]{0} fusion(%x), kind=kLoop, calls=%top\n}\n"
    )
    assert _nested_fusions(module, "top") == ["top", "mid", "leaf", "other"]
    assert _nested_fusions(module, "leaf") == ["leaf"] and _nested_fusions(module, "none") == []


# --- the page ---------------------------------------------------------------------------


def test_page_is_self_contained_with_a_csp_matching_its_code() -> None:
    page = report_page(inspect_run(DATA / "tf_dense_relu"))
    script, style = _code_blocks(page)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None
    policy = csp.group(1)
    assert "default-src 'none'" in policy and "img-src data:" in policy
    assert f"script-src '{_sha(script)}'" in policy
    assert f"style-src '{_sha(style)}'" in policy
    # nothing is fetched: no external URLs, no src= or href= to anything but fragments
    assert not re.search(r"(src|href)=\"(?!#)", page)
    assert "http://" not in page.replace("http://www.w3.org/", "")
    assert "https://" not in page
    blocks = _blocks(page)
    assert set(blocks) == {"hs-overview", "hs-module-0"}
    overview = json.loads(blocks["hs-overview"])
    assert overview["modules"][0]["after"]["kernels"] == 2
    module = json.loads(blocks["hs-module-0"])
    assert {k["name"] for k in module["kernels"]} == {"MatMul.2", "broadcast_maximum_fusion"}
    hlo = module["hlo"]["broadcast_maximum_fusion"]
    assert hlo.splitlines()[0].startswith("ROOT %broadcast_maximum_fusion =")  # the fusion itself
    assert "maximum(" in hlo
    assert [f[0] for f in module["fused"]["MatMul.2"]] == ["dot"]


def test_page_data_attaches_timings_by_module_key_and_ranks_heaviest_kernels() -> None:
    inspection = inspect_run(DATA / "jax_mlp_profile")
    key = "0030.jit_mlp"
    timing = inspection.timing(key)
    assert timing is not None
    data = page_data(inspection)
    ov = data["overview"]
    assert ov["timed"] is True
    summary = next(m for m in ov["modules"] if m["key"] == key)
    assert summary["timing"]["kernel_us"] == round(timing.kernel_us, 3)
    heaviest = [k["kernel"] for k in ov["heaviest"] if k["module"] == key]
    assert heaviest == [k.name for k in timing.kernels][: len(heaviest)]
    assert ov["heaviest"][0]["kind"] == "__ynn_fusion"
    module = next(m for m in data["modules"] if m["key"] == key)
    assert module["timing"]["executions"] == timing.executions
    assert page_data(inspect_run(DATA / "jax_mlp"))["overview"]["timed"] is False


def test_trivial_modules_get_no_diagrams_and_come_after_the_main_ones() -> None:
    calls: list[str] = []

    def fake(m, times, *, sides=SIDES):  # type: ignore[no-untyped-def]
        calls.append(m.key)
        return Diagrams(after=Diagram("<svg xmlns='http://www.w3.org/2000/svg'/>", {}))

    data = page_data(inspect_run(DATA / "jax_mlp"), diagrams=fake)
    main = [m for m in data["modules"] if not m["trivial"]]
    assert calls == [m["key"] for m in main] == ["0030.jit_mlp"]
    assert all(m["diagrams"] is None for m in data["modules"] if m["trivial"])
    assert data["modules"][0]["diagrams"]["after"]["svg"].startswith("<svg")


@needs_dot
def test_real_diagrams_map_svg_nodes_to_kernels() -> None:
    page = report_html(inspect_run(DATA / "tf_dense_relu"))
    module = json.loads(_blocks(page)["hs-module-0"])
    after, before = module["diagrams"]["after"], module["diagrams"]["before"]
    assert after["nodes"]["k/broadcast_maximum_fusion"] == ["broadcast_maximum_fusion"]
    assert 'id="k/broadcast_maximum_fusion"' in after["svg"]
    kernels = {k for ks in before["nodes"].values() for k in ks}
    assert kernels == {"MatMul.2", "broadcast_maximum_fusion"}
    for node_id in before["nodes"]:
        assert f'id="{node_id}"' in before["svg"]


def test_bench_json_is_read_and_a_broken_one_is_reported(tmp_path: Path) -> None:
    run_dir = make_xss_run(tmp_path / "run")
    run = load_run(run_dir)
    assert read_bench(run) is None
    doc = {"framework": "jax", "baseline": "eager", "modes": [{"name": "eager", "median_s": 0.1}]}
    (run_dir / BENCH_FILE).write_text(json.dumps(doc))
    bench = read_bench(run)
    assert bench is not None and bench.framework is Framework.JAX
    assert bench.mode("eager").median_s == 0.1
    assert BenchResult.from_json(bench.to_json()) == bench
    for text, message in [
        ("{not json", "not readable"),
        ("[1, 2]", "not a bench document"),
        ('{"framework": "jax", "modes": [{"median_s": "fast"}]}', "median_s has the wrong type"),
        ('{"framework": "jax", "modes": [], "schema_version": 9}', "schema_version 9"),
        # figures that are no measurement (issue 25): not shown as one
        ('{"framework": "jax", "modes": [{"median_s": -998.0}]}', "median_s is negative"),
        ('{"framework": "jax", "modes": [{"speedup": Infinity}]}', "speedup is not a finite"),
        ('{"framework": "jax", "modes": [{"repeats": "many"}]}', "repeats has the wrong type"),
        ('{"framework": "jax", "modes": [], "device": ["a"]}', "device has the wrong type"),
    ]:
        (run_dir / BENCH_FILE).write_text(text)
        with pytest.raises(DocumentError, match=message):
            read_bench(run)
        inspection = inspect_run(run, timings=False)
        assert inspection.bench is None and message.split()[0] in inspection.bench_error
        assert page_data(inspection)["overview"]["bench"] == {"error": inspection.bench_error}
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(doc))
    (run_dir / BENCH_FILE).unlink()
    (run_dir / BENCH_FILE).symlink_to(outside)
    with pytest.raises(DocumentError, match="links out of the run folder"):
        read_bench(run)


def test_no_payload_from_hlo_or_the_manifest_reaches_the_page_as_markup(tmp_path: Path) -> None:
    run = load_run(make_xss_run(tmp_path / "run"))
    page = report_html(inspect_run(run))
    for payload in PAYLOADS:
        assert payload not in page
    assert "<img" not in page and "<svg onload" not in page
    assert page.count("<script") == 3  # overview data, one module, the page's code
    assert page.count("</script>") == 3
    # ...and every payload is in the data, as data
    blocks = _blocks(page)
    text = json.dumps([json.loads(b) for b in blocks.values()], ensure_ascii=False)
    for payload in PAYLOADS:
        assert json.dumps(payload)[1:-1] in text
    # the title is escaped too
    assert "<title>hloscope report · " in page


def test_iframe_escapes_the_whole_page() -> None:
    frame = iframe_html('<p class="x">a & b</p>')
    assert 'srcdoc="&lt;p class=&quot;x&quot;&gt;a &amp; b&lt;/p&gt;"' in frame
    assert 'sandbox="allow-scripts"' in frame


def test_write_html_says_what_to_do_when_the_folder_is_missing(tmp_path: Path) -> None:
    inspection = inspect_run(DATA / "tf_dense_relu")
    with pytest.raises(UsageError, match="existing folder"):
        write_html(inspection, tmp_path / "missing" / "r.html", diagrams=False)


# --- CLI --------------------------------------------------------------------------------


def test_cli_report_html_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(DATA / "tf_dense_relu"), "--html", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.output
    page = out.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "hs-module-0" in page


def test_cli_report_html_with_json_prints_json_too(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(
        app, ["report", str(DATA / "tf_dense_relu"), "--html", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert out.is_file()
    assert '"schema_version": 1' in result.stdout


# --- notebook ---------------------------------------------------------------------------


def test_notebook_tables() -> None:
    run = hloscope.open_run(DATA / "jax_mlp")
    rows = run.summary()
    assert rows[0]["key"] == "0030.jit_mlp" and rows[0]["kernels"] == 11
    assert rows[-1]["trivial"] is True
    module = run.module("jit_mlp")
    kernels = module.kernels()
    assert len(kernels) == 11 and all(k.name for k in kernels)
    placements = module.ops()
    assert {p.status for p in placements} <= {"fused", "alone", "folded", "dead", "free", "removed"}
    html = kernel_html(kernels[0])
    assert kernels[0].name in html and "<script" not in html
    assert kernels[0]._repr_html_() == html


def test_notebook_kernel_html_escapes_names(tmp_path: Path) -> None:
    module = hloscope.open_run(make_xss_run(tmp_path / "run")).module(XSS_NAME)
    assert any("<img" in p.op.name for p in module.ops())
    html = kernel_html(module.kernels()[0])
    assert "add_maximum_fusion.é" in html and "<img" not in html


@needs_dot
def test_notebook_graph_and_html(tmp_path: Path) -> None:
    run = hloscope.open_run(DATA / "tf_dense_relu")
    module = run.modules[0]
    svg = module.graph()
    assert svg._repr_svg_().startswith("<svg") and "k/broadcast_maximum_fusion" in svg.data
    before = module.graph(before=True, max_nodes=50)
    assert "before optimization" in before.data
    assert svg.save(tmp_path / "g.svg").read_text(encoding="utf-8") == svg.data
    frame = run._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "hs-module-0" in frame
    assert "hs-module-0" in module._repr_html_()


def test_to_dataframe_needs_pandas() -> None:
    rows = [{"a": 1}]
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependencyError, match="pip install pandas"):
            notebook.to_dataframe(rows)
        return
    module = hloscope.open_run(DATA / "tf_dense_relu").modules[0]
    df = notebook.to_dataframe(module.kernels())
    assert list(df["name"]) == ["MatMul.2", "broadcast_maximum_fusion"]
    assert df["shape"][0] == "f32[64,128]{1,0}"
