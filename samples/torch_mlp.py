"""A small PyTorch/XLA MLP training step: forward, cross-entropy loss, backward, AdamW.

Each step is traced lazily by torch_xla and compiled by XLA as one graph
(`SyncTensorsGraph.<n>`) at `torch_xla.sync()`. The first step also creates AdamW's
state, so it compiles a graph of its own; the steps after it run one cached graph
(`--optimizer sgd`, plain SGD, has no state: every step runs one graph). Give several
batch sizes (`--batch-sizes 32,48,32,64`) and each new size compiles the step again:
the recompiles hloscope reports with the dimension that varied.

Runs on the CPU (`PJRT_DEVICE=CPU`, the default here when unset). Run::

    python samples/torch_mlp.py [--steps 5] [--batch 32] [--batch-sizes 32,48,64]
                                [--optimizer adamw|sgd]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

os.environ.setdefault("PJRT_DEVICE", "CPU")  # before torch_xla starts its runtime

import torch
import torch_xla
from torch import nn


class MLP(nn.Module):
    """Two ReLU hidden layers and a linear classifier."""

    def __init__(self, in_dim: int = 64, width: int = 128, classes: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_dim, width)
        self.fc2 = nn.Linear(width, width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.head(h)


def batches(sizes: list[int], in_dim: int, classes: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Deterministic CPU batches (what a data loader hands over), one per step."""
    g = torch.Generator().manual_seed(1)
    return [
        (torch.randn(n, in_dim, generator=g), torch.randint(0, classes, (n,), generator=g))
        for n in sizes
    ]


def train(
    sizes: list[int],
    optimizer: str = "adamw",
    in_dim: int = 64,
    width: int = 128,
    classes: int = 10,
) -> float:
    """Train one step per batch size on the XLA device; the last loss."""
    torch.manual_seed(0)
    device = torch_xla.device()
    model = MLP(in_dim, width, classes).to(device)
    opt: torch.optim.Optimizer
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = torch.zeros((), device=device)
    for x, y in batches(sizes, in_dim, classes):
        x, y = x.to(device), y.to(device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        torch_xla.sync()  # the step is traced until here, then compiled and run
    return float(loss.item())


def bench() -> tuple[Callable[[torch.Tensor], torch.Tensor], tuple[torch.Tensor]]:
    """Return ``(fn, args)`` for `hloscope bench`: the model's forward pass (an
    `nn.Module`, moved to the XLA device for the torch_xla mode) and a CPU batch."""
    torch.manual_seed(0)
    return MLP().eval(), (batches([256], 64, 10)[0][0],)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--batch-sizes", help="comma-separated: one step per size")
    parser.add_argument("--optimizer", choices=("adamw", "sgd"), default="adamw")
    args = parser.parse_args()
    if args.batch_sizes:
        sizes = [int(s) for s in args.batch_sizes.split(",")]
    else:
        sizes = [args.batch] * args.steps
    loss = train(sizes, args.optimizer)
    print(
        f"torch_mlp: {len(sizes)} {args.optimizer} steps, batch sizes {sizes}, last loss {loss:.4f}"
    )


if __name__ == "__main__":
    main()
