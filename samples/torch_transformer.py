"""A small pre-norm transformer block in PyTorch/XLA: self-attention and an MLP.

LayerNorm, multi-head attention written out (QKV projection, scaled dot product with a
causal mask, softmax, output projection) and a GELU MLP, each with a residual. The
forward pass over a batch is traced lazily by torch_xla and compiled by XLA as one
graph at `torch_xla.sync()`; XLA fuses the softmax's and LayerNorm's elementwise ops
and the bias-adds and GELU into the matmuls' neighbours.

Runs on the CPU (`PJRT_DEVICE=CPU`, the default here when unset). Run::

    python samples/torch_transformer.py [--batch 4] [--seq 32] [--dim 64] [--heads 4] [--calls 3]
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

os.environ.setdefault("PJRT_DEVICE", "CPU")  # before torch_xla starts its runtime

import torch
import torch_xla
from torch import nn


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then + mlp(ln(x))."""

    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln1(x))
        return x + self.down(nn.functional.gelu(self.up(self.ln2(x))))


def make_inputs(batch: int = 4, seq: int = 32, dim: int = 64) -> torch.Tensor:
    """A deterministic CPU batch of token embeddings."""
    return torch.randn(batch, seq, dim, generator=torch.Generator().manual_seed(1))


def bench() -> tuple[Callable[[torch.Tensor], torch.Tensor], tuple[torch.Tensor]]:
    """Return ``(fn, args)`` for `hloscope bench`: the block (an `nn.Module`, moved to
    the XLA device for the torch_xla mode) and a CPU batch."""
    torch.manual_seed(0)
    return Block().eval(), (make_inputs(),)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=32)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch_xla.device()
    block = Block(args.dim, args.heads).to(device).eval()
    x = make_inputs(args.batch, args.seq, args.dim).to(device)
    y = x
    with torch.no_grad():
        for _ in range(args.calls):
            y = block(x)
            torch_xla.sync()  # traced until here, then compiled once and run
    print(f"torch_transformer: out shape {tuple(y.shape)}, mean {float(y.mean()):.4f}")


if __name__ == "__main__":
    main()
