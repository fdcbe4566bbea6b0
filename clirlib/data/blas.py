"""Single-threaded BLAS while the embedded benchmark is generated (Section 5 stand-in data).

The generator's linear algebra (randomised SVD of the PPMI matrix) is small. With
OpenBLAS's default thread pool it becomes 50-100 times slower as soon as other processes
busy the CPU cores (its threads spin while waiting for one another), and its floating-point
results can depend on the thread count. One thread is fast and gives the same bits on
every machine, which the byte-identical output relies on.

There is no dependency for this (threadpoolctl does it in general): this module finds
the OpenBLAS libraries bundled with numpy and scipy wheels and calls their
``*_set_num_threads`` entry points through ctypes. Where none is found it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
from collections.abc import Iterator

import numpy as np

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")


def _libraries() -> list[tuple[object, object]]:
    out = []
    try:
        import scipy
        dirs = [os.path.dirname(np.__file__) + ".libs", os.path.dirname(scipy.__file__) + ".libs",
                os.path.join(os.path.dirname(np.__file__), ".libs")]
    except ImportError:  # pragma: no cover - scipy is a dependency
        dirs = [os.path.dirname(np.__file__) + ".libs"]
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "*openblas*"))):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
            getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
            if setter is not None and getter is not None:
                getter.restype = ctypes.c_int
                out.append((setter, getter))
    return out


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the body with one OpenBLAS thread, then restore the previous counts."""
    libs = _libraries()
    before = [getter() for _, getter in libs]
    for setter, _ in libs:
        setter(1)
    try:
        yield
    finally:
        for (setter, _), n in zip(libs, before):
            setter(n)
