"""A tiny attention classifier trained on torch_xla at changing sequence lengths, reading
its loss with `.item()` before each step's `torch_xla.sync()`.

Each `.item()` compiles and runs the graph traced so far (the forward pass and the loss);
the sync compiles the rest of the step. Both are compiled again for each new length.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("PJRT_DEVICE", "CPU")  # before torch_xla starts its runtime

import torch
import torch_xla
from torch import nn


class Attention(nn.Module):
    """One attention head over the sequence, mean-pooled, then a linear classifier."""

    def __init__(self, width: int = 32, classes: int = 4) -> None:
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        weights = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5, dim=-1)
        return self.head((weights @ v).mean(dim=1))


def main() -> None:
    lengths = [int(n) for n in (sys.argv[1] if len(sys.argv) > 1 else "16,24,16").split(",")]
    device = torch_xla.device()
    torch.manual_seed(0)
    model = Attention().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    for n in lengths:
        x = torch.randn(8, n, 32, generator=g).to(device)
        y = torch.randint(0, 4, (8,), generator=g).to(device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        print(f"length {n}: loss {loss.item():.4f}")  # runs the forward pass now
        loss.backward()
        opt.step()
        torch_xla.sync()
    print(f"sequence lengths {lengths}")


if __name__ == "__main__":
    main()
