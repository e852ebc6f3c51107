"""Diagrams of big real models fold by name scope and repetition to a readable size.

DenseNet121, EfficientNetB0 and a 6-layer transformer (tests/data/diagram_models, see
HOW.md) and ResNet-50 (tests/data/tf_resnet50) at the default node budget: every kernel
is accounted for, the picture stays within the budget in nodes and about 1.5 edges per
node, and the repeated blocks are the ones the models are built of.
"""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest

from hloscope.analysis.fusion import analyze_module
from hloscope.analysis.provenance import trace
from hloscope.hlo.parser import parse_file
from hloscope.render import diagram as G
from tests.conftest import DATA, dump_file

MODELS = DATA / "diagram_models"


def _after(name: str, tmp_path: Path) -> Path:
    if name == "resnet50":
        return dump_file("tf_resnet50", "*cpu_after_optimizations.txt")
    path = tmp_path / f"{name}.cpu_after_optimizations.txt"
    path.write_bytes(lzma.decompress((MODELS / f"{path.name}.xz").read_bytes()))
    return path


def _spec(name: str, tmp_path: Path, **kwargs: int) -> tuple[G.DiagramSpec, int]:
    after = parse_file(_after(name, tmp_path))
    analysis = analyze_module(after)
    return G.kernel_graph(after, analysis, trace(after, analysis), **kwargs), len(analysis.kernels)


def _repeats(spec: G.DiagramSpec) -> dict[str, int]:
    return {n.lines[0].rsplit(" ×", 1)[0]: n.repeat for n in spec.nodes if n.role == G.REPEAT}


@pytest.mark.parametrize(
    ("name", "kernels"),
    [("densenet", 438), ("efficientnet", 225), ("transformer_stack", 150), ("resnet50", 165)],
)
def test_default_diagram_is_within_the_budget(name: str, kernels: int, tmp_path: Path) -> None:
    spec, n = _spec(name, tmp_path)
    assert n == kernels
    assert spec.collapsed and spec.units == kernels
    assert len(spec.nodes) <= G.DEFAULT_MAX_NODES
    assert len(spec.edges) <= 1.5 * G.DEFAULT_MAX_NODES
    grouped = sum(x.count for x in spec.nodes if x.role in (G.GROUP_NODE, G.REPEAT))
    alone = sum(1 for x in spec.nodes if x.role == G.KERNEL)
    assert grouped + alone == kernels  # every kernel drawn or in exactly one group


def test_densenet_dense_blocks_fold_although_each_reads_one_more_input(
    tmp_path: Path,
) -> None:
    spec, _ = _spec("densenet", tmp_path)
    repeats = _repeats(spec)
    # 6, 12, 24, 16 blocks per stage: the first is drawn and the rest fold (at most one
    # more block stays apart where XLA fused across its boundary)
    for stage, blocks in (("conv2", 6), ("conv3", 12), ("conv4", 24), ("conv5", 16)):
        found = [r for label, r in repeats.items() if label == f"{stage}_block#"]
        assert len(found) == 1 and blocks - 2 <= found[0] <= blocks - 1, (stage, repeats)
    assert repeats["pool#"] == 2  # the transition layers pool2..4
    # the former default drew 300 nodes and 836 edges
    assert len(spec.nodes) < 60 and len(spec.edges) < 80


def test_transformer_layers_fold_into_one_repeat(tmp_path: Path) -> None:
    spec, _ = _spec("transformer_stack", tmp_path)
    assert _repeats(spec) == {"layer_#": 5}


def test_a_bigger_budget_draws_finer_up_to_every_kernel(tmp_path: Path) -> None:
    small, n = _spec("efficientnet", tmp_path, max_nodes=40)
    default, _ = _spec("efficientnet", tmp_path)
    everything, _ = _spec("efficientnet", tmp_path, max_nodes=n + 10)
    assert len(small.nodes) <= 40 < len(default.nodes)
    assert not everything.collapsed
    assert sum(1 for x in everything.nodes if x.role == G.KERNEL) == n


def test_kernels_without_an_op_show_inferred_ops_marked(tmp_path: Path) -> None:
    after = parse_file(dump_file("keras_cnn_fit", "*cpu_after_optimizations.txt"))
    analysis = analyze_module(after)
    prov = trace(after, analysis)
    spec = G.kernel_graph(after, analysis, prov, max_nodes=500)
    node = next(n for n in spec.nodes if n.id == "k/wrapped_reduce-window.1")
    text = " ".join(node.lines) + node.tooltip
    assert "(inferred)" in text
    assert prov.inferred["wrapped_reduce-window.1"].ops[0] in text
