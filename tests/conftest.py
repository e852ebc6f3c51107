"""Shared fixtures: paths to captured test data and to the external HLO corpus."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"
# The corpus of real XLA modules lives beside the checkout (../shared/corpus), never in it.
CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
# Real GPU and TPU artifacts from other projects' CI (../shared/gpu, see its README.md).
GPU = Path(__file__).resolve().parents[2] / "shared" / "gpu"


@pytest.fixture(autouse=True, scope="session")
def _probe_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The roofline's CPU probe caches into a session folder, never the user's cache.
    Commands keep no output there (HLOSCOPE_CACHE_MB=0): each test sees its command
    compute, and tests/test_cli_output_cache.py turns the cache on."""
    saved = os.environ.get("HLOSCOPE_CACHE_DIR")
    os.environ["HLOSCOPE_CACHE_DIR"] = str(tmp_path_factory.mktemp("hloscope-cache"))
    os.environ["HLOSCOPE_CACHE_MB"] = "0"
    yield
    os.environ.pop("HLOSCOPE_CACHE_MB", None)
    if saved is None:
        os.environ.pop("HLOSCOPE_CACHE_DIR", None)
    else:
        os.environ["HLOSCOPE_CACHE_DIR"] = saved


@pytest.fixture(autouse=True, scope="session")
def _temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """What hloscope keeps in the temp folder by design (`hloscope.inspect`'s runs, the
    nsys-jax unpack cache) goes to the session's pytest folder, for this process
    (`tempfile.tempdir`) and the commands it starts (TMPDIR): the suite leaves nothing
    in /tmp."""
    folder = str(tmp_path_factory.mktemp("tmp"))
    saved, saved_env = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    yield
    tempfile.tempdir = saved
    if saved_env is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = saved_env


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """tests/data: captured dumps, each folder with a HOW.md saying how it was made."""
    return DATA


def dump_file(folder: str, pattern: str) -> Path:
    """The one file in tests/data/<folder> matching `pattern` (a glob)."""
    matches = sorted((DATA / folder).glob(pattern))
    assert len(matches) == 1, f"{folder}/{pattern}: {matches}"
    return matches[0]
