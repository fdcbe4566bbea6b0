"""Determinism switches, in one place: seeds, deterministic kernels, thread count.

Used by the library (``train``, ``experiments``), the notebooks and the tests, so the
same command gives the same numbers on the same machine. Every random draw in clirlib
takes an explicit seed or a ``numpy.random.Generator`` / ``torch.Generator`` made here.
"""

from __future__ import annotations

import contextlib
import random
from typing import Iterator

import numpy as np
import torch

from . import env

#: Threads used by torch on the CPU. The target machines have 2 cores.
DEFAULT_THREADS = env.threads(2)


def configure(threads: int = DEFAULT_THREADS) -> None:
    """Deterministic kernels and a fixed thread count (call once per process)."""
    torch.use_deterministic_algorithms(True, warn_only=False)
    if torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
    # cuBLAS needs this for deterministic matmuls when a GPU is used.
    env.set_default("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if torch.backends.cudnn.is_available():
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run small kernels on one torch thread, then restore the count. For speed: on a loaded
    2-core machine two spinning OpenMP threads make tiny steps (TransE's, an MDL autoencoder's)
    many times slower (docs/timings.md, "Speed notes behind the code"). The code that uses it
    always runs inside it, so its results do not depend on the machine's thread count."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


@contextlib.contextmanager
def pinned_threads(n: int) -> Iterator[None]:
    """Run on exactly ``n`` torch threads, then restore the count: code whose floating-point
    results could follow the thread count (large matrix products) pins it."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def seed_everything(seed: int) -> None:
    """Seed Python, NumPy's legacy global state and torch (CPU and GPU)."""
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def rng(seed: int, *stream: int | str) -> np.random.Generator:
    """An independent NumPy generator for ``seed`` and a named sub-stream.

    ``rng(seed, "nr-sampling")`` and ``rng(seed, "split")`` never share draws, so adding
    a new use of randomness does not shift the others.
    """
    key = [seed] + [_stable_int(s) for s in stream]
    return np.random.default_rng(np.random.SeedSequence(key))


def torch_generator(seed: int, *stream: int | str) -> torch.Generator:
    """A torch CPU generator seeded like :func:`rng`."""
    g = torch.Generator()
    g.manual_seed(int(rng(seed, *stream).integers(0, 2**63 - 1)))
    return g


#: Devices pinned by :func:`on_device`, innermost last (they win over ``CLIRLIB_DEVICE``).
_pinned: list[str] = []


def device() -> torch.device:
    """Where the paper's ranker trains: a device pinned by :func:`on_device`, else
    ``CLIRLIB_DEVICE`` (``auto``: the GPU when torch sees one, the CPU otherwise; a GPU is
    used, never required). A GPU gives other floating-point results than the CPU (other
    kernels, other summation orders, its own dropout masks), so the numbers of the tests
    and of the shipped records are CPU results and are checked on the CPU."""
    choice = _pinned[-1] if _pinned else env.device_choice()
    if choice == "auto":
        choice = "cuda" if torch.cuda.is_available() else "cpu"
    elif choice == "cuda" and not torch.cuda.is_available():
        who = "a pinned device (determinism.on_device)" if _pinned else f"{env.DEVICE}=cuda"
        raise ValueError(f"{who} asks for a GPU, but torch sees none (torch {torch.__version__})")
    return torch.device(choice)


@contextlib.contextmanager
def on_device(name: str) -> Iterator[None]:
    """Train on ``name`` (``cpu``, ``cuda`` or ``auto``) inside the block, whatever
    ``CLIRLIB_DEVICE`` says, in this process only (worker processes read the variable):
    ``records verify`` retrains a record where it was trained, a Ray task where it reserved."""
    if name not in env.DEVICE_NAMES:
        raise ValueError(f"unknown device {name!r}: use one of {', '.join(env.DEVICE_NAMES)}")
    _pinned.append(name)
    try:
        yield
    finally:
        _pinned.pop()


def describe(dev: torch.device) -> str:
    """``cpu``, or ``cuda: <the GPU's name>``: what a record says it was trained on."""
    return f"cuda: {torch.cuda.get_device_name(dev)}" if dev.type == "cuda" else dev.type


def _stable_int(s: int | str) -> int:
    if isinstance(s, int):
        return s
    # Python's hash() of str is salted per process; this is not.
    h = 0
    for ch in s.encode("utf-8"):
        h = (h * 131 + ch) % (2**61 - 1)
    return h
