"""What a kernel holds, in a few words: its main source ops beside its HLO name.

A kernel's HLO name says how XLA built it (`bitcast_concatenate_fusion`), not what of
the program it runs; every timing table, the roofline and the HTML page print
`kernel · ops` instead (`bitcast_concatenate_fusion · dropout/random_uniform`). The ops
come from the provenance join (`Provenance.kernel_ops`, else the ops inferred for a
kernel that does no op's work, marked `~`); this module only words them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from hloscope.analysis.report import ModuleReport

__all__ = ["SEPARATOR", "KernelHolds", "holds", "kernel_holds", "labelled", "module_root"]

SEPARATOR = " · "
"""Between a kernel's HLO name and what it holds."""

INFERRED = "~"
"""Marks ops inferred for a kernel that holds none (a copy, an iota)."""

# Longest `scope/{a,b,c}` form before it becomes `scope/… (N ops)`.
_LEAVES_WIDTH = 48


def module_root(names: Sequence[str]) -> str:
    """The name scope every op of a module is in (`jit(mlp)`, `resnet50_1`), which no
    kernel's words need to repeat; "" when the ops share none."""
    if not names or "/" not in names[0]:
        return ""
    first = names[0].split("/", 1)[0]
    prefix = first + "/"  # each name's first part is `first`, and a part follows it
    return first if all(n.startswith(prefix) for n in names) else ""


def holds(ops: Sequence[str], root: str = "") -> str:
    """A few words for a kernel's source ops.

    One op is its name; ops under one name scope are that scope with their last parts
    (`layer0/{add,mul,tanh}`, or `layer0/… (9 ops)` when long); ops of several scopes
    are those of the scope holding most of them and how many more (`Gelu/{mul,Erfc} +1`).

    Args:
        ops: The kernel's source op names, first seen first.
        root: A scope every op of the module shares (`module_root`), left out.

    Returns:
        The words; "" for no ops.
    """
    names = list(dict.fromkeys(_without(o, root) for o in ops))
    if len(names) <= 1:
        return names[0] if names else ""
    # Each name's (scope, "/", leaf): ("", "", name) for a name of one part. Counted in
    # a dict, not a `Counter` per kernel (44k kernels in a 153 MB module's page);
    # `max` takes the first scope of the most names, as `Counter.most_common` does.
    split = [n.rpartition("/") for n in names]
    counts: dict[str, int] = {}
    for scope, _, _ in split:
        counts[scope] = counts.get(scope, 0) + 1
    scope = max(counts, key=counts.__getitem__)
    leaves = [leaf for s, _, leaf in split if s == scope]
    if len(leaves) == 1:  # nothing in common: the first op and how many more
        return f"{names[0]} +{len(names) - 1}"
    words = f"{scope}/{{{','.join(leaves)}}}" if scope else "{" + ",".join(leaves) + "}"
    if len(words) > _LEAVES_WIDTH:
        short = _scope(scope, _LEAVES_WIDTH - 8)
        words = f"{short} ({len(leaves)} ops)" if scope else f"{len(leaves)} ops"
    rest = len(names) - len(leaves)
    return f"{words} +{rest}" if rest else words


def _scope(scope: str, width: int) -> str:
    """A name scope in about `width` characters, keeping the layer (its second part,
    under the model's or the function's name) and the op group (its last part):
    `sequential_1/dropout_1/…/stateless_random_uniform`, else
    `…/dropout_1/…/stateless_random_uniform`."""
    parts = scope.split("/")
    if len(scope) <= width or len(parts) < 3:
        return scope
    first, layer, last = parts[0], parts[1], parts[-1]
    gap = "/…/" if len(parts) > 3 else "/"
    for text in (f"{first}/{layer}{gap}{last}", f"…/{layer}{gap}{last}", f"{first}/…/{last}"):
        if len(text) <= width:
            return text
    return f"…/{last}"


def _without(name: str, root: str) -> str:
    return name[len(root) + 1 :] if root and name.startswith(root + "/") else name


def kernel_holds(m: ModuleReport) -> dict[str, str]:
    """Each kernel of a module -> the words for what it holds (`holds`); kernels whose
    ops were inferred are marked `~`, kernels with no op at all are left out."""
    return dict(KernelHolds(m))


class KernelHolds(Mapping[str, str]):
    """`kernel_holds` of a module, each kernel's words found when first asked: a report
    prints a few kernels of tens of thousands (the 107 MB module's 44k took 0.5 s of
    its 0.6 s text)."""

    def __init__(self, m: ModuleReport) -> None:
        self._provenance = m.provenance
        self._root: str | None = None
        self._found: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        words = self._words(name)
        if not words:
            raise KeyError(name)
        return words

    def __iter__(self) -> Iterator[str]:
        prov = self._provenance
        if prov is None:
            return iter(())
        names = dict.fromkeys(prov.kernel_ops) | dict.fromkeys(prov.inferred)
        return (name for name in names if self._words(name))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def _words(self, name: str) -> str:
        found = self._found.get(name)
        if found is not None:
            return found
        prov = self._provenance
        if prov is None:
            return ""
        if self._root is None:
            self._root = module_root(prov.op_names())
        ops = prov.kernel_ops.get(name)
        words = holds([o.name for o in ops], self._root) if ops is not None else ""
        inferred = prov.inferred.get(name)
        if not words and inferred is not None and inferred.ops:
            words = INFERRED + holds(list(inferred.ops), self._root)
        self._found[name] = words
        return words


def labelled(name: str, words: Mapping[str, str] | None) -> str:
    """`kernel · what it holds`, or the kernel's name alone when nothing is known."""
    held = (words or {}).get(name, "")
    return f"{name}{SEPARATOR}{held}" if held else name
