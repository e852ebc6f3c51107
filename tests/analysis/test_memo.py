"""`memo.Later`: a mapping made on first read, that reads as the mapping it makes."""

from __future__ import annotations

import pickle

from hloscope.analysis.memo import Ahead, Later


def test_a_later_mapping_reads_as_the_dict_it_makes_once() -> None:
    made: list[int] = []

    def make() -> dict[str, int]:
        made.append(1)
        return {"a": 1, "b": 2}

    later = Later(make)
    assert not made  # nothing made before the first read
    plain = {"a": 1, "b": 2}
    assert later.get("a") == 1 and later.get("z") is None and later.get("z", 7) == 7
    assert "b" in later and "z" not in later
    assert list(later.keys()) == list(plain.keys())
    assert list(later.items()) == list(plain.items())
    assert list(later.values()) == list(plain.values())
    assert list(later) == ["a", "b"] and len(later) == 2 and later["b"] == 2
    assert later == plain and dict(later) == plain
    assert made == [1]  # made once
    assert later.get.__self__ is later._made()  # once made, `get` is the dict's own
    assert pickle.loads(pickle.dumps(later)) == plain


def test_a_later_mapping_of_a_later_mapping() -> None:
    """The op graph reads its ops' kernels through one made of another."""
    inner = Later(lambda: {"op": ("fusion.1", "fusion.2")})
    outer = Later(lambda: {op: kernels[0] for op, kernels in inner.items()})
    assert outer.get("op") == "fusion.1" and outer.get("other") is None
    assert dict(outer.items()) == {"op": "fusion.1"}


def test_a_value_found_ahead_is_taken_by_the_next_call_only() -> None:
    from hloscope.hlo.parser import parse_module

    module = parse_module("HloModule m\n\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n")
    made: list[int] = []

    def compute(m: object) -> list[int]:
        made.append(1)
        return [len(made)]

    ahead = Ahead(compute)
    assert ahead(module) == [1]  # none found ahead: computed
    ahead.ahead(module)
    assert made == [1, 1] and ahead(module) == [2]  # taken, not computed again
    assert ahead(module) == [3] and not ahead._kept  # nothing kept after
    ahead.ahead(module)
    del module  # one never taken is forgotten with its module
    import gc

    gc.collect()
    assert not ahead._kept
