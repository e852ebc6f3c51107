"""Terminal rendering of reports: the module table that ends `dump` and starts `report`."""

from __future__ import annotations

import io
import re

from rich.console import Console

from hloscope.analysis.report import analyze_run
from hloscope.render.text import modules_table, short_name
from hloscope.runs import load_run
from tests.conftest import DATA


def _render(renderable: object, width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined,no-any-return]


def test_module_table_folds_helpers_and_matches_the_analysis() -> None:
    report = analyze_run(load_run(DATA / "jax_mlp"))
    (mlp,) = report.main
    assert mlp.before is not None and mlp.after is not None
    assert mlp.provenance is not None
    compact = _render(modules_table(report))
    line = next(x for x in compact.splitlines() if "0030.jit_mlp" in x)
    assert line.split()[1:] == [
        f"{mlp.before.instructions}→{mlp.after.instructions}",
        f"{mlp.before.ops}→{mlp.after.kernel_count}",
        str(mlp.after.fusions),
        str(mlp.after.launches),
        f"{mlp.ops_per_kernel:.1f}",
        str(len(mlp.provenance.placements)),
        str(sum(p.status == "alone" for p in mlp.provenance.placements)),
    ]
    assert "+ 20 trivial helper modules: jit__normal ×4" in compact
    assert "jit_sqrt" not in compact
    assert "0010.jit_sqrt" in _render(modules_table(report, show_all=True))


def test_module_table_fits_the_terminal() -> None:
    report = analyze_run(load_run(DATA / "tf_dense_relu"))
    for width in (80, 100):
        text = _render(modules_table(report, width=width), width=width)
        lines = text.splitlines()
        assert "…" not in lines[0] + lines[1]  # headers are not cut
        assert max(map(len, lines)) <= width
        assert "16→12" in text
    # wide enough, the name is whole, less TensorFlow's mangling
    assert "0000.a_inference_dense_relu_12.1 " in _render(modules_table(report, width=100))


def test_short_name_drops_tf_noise_and_cuts_in_the_middle() -> None:
    name = (
        "a_inference_dense_relu_12__XlaMustCompile_true_config_proto_13561319589895757934"
        "_executor_type_11160318154034397263_.1"
    )
    assert short_name(name) == "a_inference_dense_relu_12.1"
    assert short_name("jit_mlp") == "jit_mlp"
    cut = short_name("x" * 30 + "y" * 30, 21)
    assert len(cut) == 21 and cut.startswith("xxxx") and cut.endswith("yyyy") and "…" in cut


def test_counts_agree_with_their_noun() -> None:
    from hloscope.render.format import counted

    assert [counted(n, "kernel") for n in (0, 1, 2)] == ["0 kernels", "1 kernel", "2 kernels"]
    assert counted(2, "launch") == "2 launches" and counted(3, "branch") == "3 branches"
    assert counted(1, "more module") == "1 more module"
    # the trivial helpers' line, on a run with one kernel among its helpers
    report = analyze_run(load_run(DATA / "jax_mlp"))
    text = _render(modules_table(report), width=200)
    assert not re.search(r"\b1 (kernels|modules|instructions)\b", text)


def test_an_ops_line_is_made_as_rich_assembles_it() -> None:
    """`placement_line`'s `Line` makes its `Text` at once: the same characters, styles
    and ends as `Text.assemble`, control codes included, which rich strips."""
    import random

    from rich.text import Text

    from hloscope.render.text import Line

    rng = random.Random(27)
    pieces = ["op", "  ", "\x1b[2J", "\x07", "é", "\r", "x\n", "\t", "宽", ""]
    for _ in range(2000):
        parts = [
            (rng.choice(pieces) * rng.randrange(3), rng.choice(["", "bold", "dim", "green"]))
            for _ in range(rng.randrange(1, 7))
        ]
        made, assembled = Line(parts).text(), Text.assemble(*parts)
        assert (made.plain, made.spans, made.end) == (
            assembled.plain,
            assembled.spans,
            assembled.end,
        )
