"""Single-threaded BLAS while the embedded benchmark is generated (Section 5 stand-in data).

The generator's linear algebra (randomised SVD of the PPMI matrix) is small. With
OpenBLAS's default thread pool it becomes 50-100 times slower as soon as other processes
busy the CPU cores (its threads spin while waiting for one another), and its floating-point
results can depend on the thread count. One thread is fast and gives the same bits on
every machine, which the byte-identical output relies on.

``threadpoolctl`` sets every BLAS library loaded in the process (numpy's and scipy's
OpenBLAS, MKL, BLIS, ...) to one thread and restores the previous counts after. When it
finds no BLAS library, or one keeps more than one thread, the counts are not pinned and
the files may then differ from other machines' in the last bits: that is said once per
process (``UnpinnedThreadsWarning``) instead of silently.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

from threadpoolctl import threadpool_info, threadpool_limits


class UnpinnedThreadsWarning(RuntimeWarning):
    """BLAS thread counts could not be set to one."""


_WARNED = False


def unpinned(info: list[dict]) -> str | None:
    """Why the BLAS libraries in ``info`` (``threadpoolctl.threadpool_info()`` entries) are
    not all pinned to one thread, or ``None`` when they are."""
    blas = [lib for lib in info if lib.get("user_api") == "blas"]
    if not blas:
        return "threadpoolctl found no BLAS library"
    multi = [f"{lib.get('prefix')} ({lib.get('filepath')}): {lib.get('num_threads')} threads"
             for lib in blas if lib.get("num_threads") != 1]
    return "BLAS kept more than one thread: " + "; ".join(multi) if multi else None


def _warn_once(reason: str) -> None:
    global _WARNED
    if not _WARNED:
        _WARNED = True
        warnings.warn(f"{reason}; BLAS thread counts are not pinned to 1, so the generated benchmark's "
                      "floats may depend on the machine's thread count", UnpinnedThreadsWarning, stacklevel=3)


@contextlib.contextmanager
def single_threaded_blas() -> Iterator[None]:
    """Run the body with one thread in every BLAS library, then restore the previous counts."""
    import scipy.linalg  # noqa: F401  (loads scipy's own BLAS, so it is pinned too)

    with threadpool_limits(limits=1, user_api="blas"):
        reason = unpinned(threadpool_info())
        if reason is not None:
            _warn_once(reason)
        yield
