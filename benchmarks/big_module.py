"""A generated huge HLO module, before and after "optimization", for the scale benchmarks
of issue 14.

The before module looks like what JAX hands XLA for a training step: one ENTRY
computation, a forward pass of layers (three blocks of chained elementwise ops under
name scopes `jit(train)/layer_<i>/<block>/<op>`, with residual edges and cross edges to
recent ops), then the backward pass in reverse under
`jit(train)/transpose(jvp(train))/layer_<i>/...`, each backward block reading forward
activations of its layer: the long edges that make a collapsed diagram dense. Every
instruction carries metadata, as real dumps do (about 200 bytes per instruction, so
`--mb 105` gives about 500k instructions).

The after module fuses each block of 12 ops into one kLoop fusion with its own fused
computation (an operand from another block reads that block's fusion), as XLA's CPU
backend would: the same ops, one kernel per block. XLA's own parser accepts both.

    python benchmarks/big_module.py --mb 105 OUT_DIR
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from pathlib import Path

_BLOCKS = ("attn", "mlp", "norm")
_UNARY = ("exponential", "tanh", "negate", "rsqrt", "log")
_BINARY = ("add", "multiply", "subtract", "maximum", "divide")
SHAPE = "f32[64,256]{1,0}"
_OPS_PER_BLOCK = 12
_BYTES_PER_OP = 196
NAME = "jit_train"
_LAYOUT = "entry_computation_layout={(f32[64,256]{1,0})->f32[64,256]{1,0}}"


@dataclass
class Op:
    name: str
    opcode: str
    operands: list[str]
    scope: str
    line: int

    def text(self, names: dict[str, str] | None = None) -> str:
        """The instruction line, operands renamed through `names`."""
        args = ", ".join(f"%{(names or {}).get(o, o)}" for o in self.operands)
        meta = (
            f'metadata={{op_type="{self.opcode}" op_name="jit(train)/{self.scope}/{self.opcode}"'
            f' source_file="/home/user/model/layers.py" source_line={self.line}}}'
        )
        return f"%{self.name} = {SHAPE} {self.opcode}({args}), {meta}"


def blocks(target_bytes: int, seed: int = 0) -> list[list[Op]]:
    """The module's ops in blocks of 12, about `target_bytes` of before text."""
    rng = random.Random(seed)
    per_layer = len(_BLOCKS) * _OPS_PER_BLOCK
    layers = max(1, target_bytes // (2 * per_layer * _BYTES_PER_OP))
    out: list[list[Op]] = []
    names = ["Arg_0.1"]
    forward: list[list[str]] = []
    for layer in range(layers):
        forward.append(_layer(out, names, rng, f"layer_{layer}", None))
    for layer in reversed(range(layers)):
        _layer(out, names, rng, f"transpose(jvp(train))/layer_{layer}", forward[layer])
    return out


def _layer(
    out: list[list[Op]],
    names: list[str],
    rng: random.Random,
    scope: str,
    saved: list[str] | None,
) -> list[str]:
    """Append one layer's blocks; return the names of its ops."""
    start, made = names[-1], []
    for block in _BLOCKS:
        ops = []
        for k in range(_OPS_PER_BLOCK):
            name, prev = f"op.{len(names)}", names[-1]
            if k % 3 == 0:
                ops.append(Op(name, rng.choice(_UNARY), [prev], f"{scope}/{block}", 100 + k))
            else:
                if saved is not None and k % 3 == 1:
                    other = rng.choice(saved)  # a forward activation of this layer
                elif k == _OPS_PER_BLOCK - 1:
                    other = start  # the residual
                else:
                    other = names[max(0, len(names) - rng.randint(2, 60))]
                opcode = rng.choice(_BINARY)
                ops.append(Op(name, opcode, [prev, other], f"{scope}/{block}", 100 + k))
            names.append(name)
            made.append(name)
        out.append(ops)
    return made


def before_text(all_blocks: list[list[Op]]) -> str:
    """One ENTRY computation holding every op."""
    lines = [
        f"HloModule {NAME}, {_LAYOUT}",
        "",
        "ENTRY %main.1 (Arg_0.1: f32[64,256]) -> f32[64,256] {",
    ]
    lines.append(f'  %Arg_0.1 = {SHAPE} parameter(0), metadata={{op_name="x"}}')
    lines += [f"  {op.text()}" for ops in all_blocks for op in ops]
    lines[-1] = "  ROOT " + lines[-1].lstrip()
    return "\n".join([*lines, "}", ""])


def after_text(all_blocks: list[list[Op]]) -> str:
    """Each block one kLoop fusion; an operand from another block reads its fusion."""
    fusion_of = {op.name: f"fusion.{i}" for i, ops in enumerate(all_blocks) for op in ops}
    fusion_of["Arg_0.1"] = "Arg_0.1"
    lines = [f"HloModule {NAME}, is_scheduled=true, {_LAYOUT}", ""]
    entry = [f'  %Arg_0.1 = {SHAPE} parameter(0), metadata={{op_name="x"}}']
    for i, ops in enumerate(all_blocks):
        inside = {op.name for op in ops}
        outer = list(dict.fromkeys(o for op in ops for o in op.operands if o not in inside))
        params = {o: f"param_{j}.{i}" for j, o in enumerate(outer)}
        sig = ", ".join(f"{p}: f32[64,256]" for p in params.values())
        lines.append(f"%fused_computation.{i} ({sig}) -> f32[64,256] {{")
        lines += [f"  %{p} = {SHAPE} parameter({j})" for j, p in enumerate(params.values())]
        body = [f"  {op.text(params)}" for op in ops]
        body[-1] = "  ROOT " + body[-1].lstrip()
        lines += [*body, "}", ""]
        args = ", ".join(f"%{fusion_of[o]}" for o in outer)
        last = ops[-1].text().split(", metadata=", 1)[1]
        entry.append(
            f"  %fusion.{i} = {SHAPE} fusion({args}), kind=kLoop, "
            f"calls=%fused_computation.{i}, metadata={last}"
        )
    entry[-1] = "  ROOT " + entry[-1].lstrip()
    lines += ["ENTRY %main.2 (Arg_0.1: f32[64,256]) -> f32[64,256] {", *entry, "}", ""]
    return "\n".join(lines)


def write_big_module(folder: Path, mb: float, seed: int = 0) -> tuple[Path, Path]:
    """Write `module_0001.jit_train.{before,cpu_after}_optimizations.txt` (about `mb` MB
    each) into `folder`; return both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    all_blocks = blocks(int(mb * 1e6), seed)
    before = folder / f"module_0001.{NAME}.before_optimizations.txt"
    after = folder / f"module_0001.{NAME}.cpu_after_optimizations.txt"
    before.write_text(before_text(all_blocks), encoding="utf-8")
    after.write_text(after_text(all_blocks), encoding="utf-8")
    return before, after


def main() -> None:
    """Write the pair."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--mb", type=float, default=105.0)
    args = ap.parse_args()
    for path in write_big_module(args.out, args.mb):
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
