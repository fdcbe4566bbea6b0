"""The BLAS thread pin of the benchmark generator (clirlib.data.blas, threadpoolctl)."""

import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from clirlib.data import blas


def _blas_threads():
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_pins_every_blas_library_to_one_thread_and_restores():
    import scipy.linalg  # noqa: F401  (the helper loads it too; loaded here so `before` sees it)

    before = _blas_threads()
    assert before, "numpy / scipy wheels bundle OpenBLAS: threadpoolctl should see it"
    with warnings.catch_warnings():
        warnings.simplefilter("error", blas.UnpinnedThreadsWarning)  # nothing to warn about here
        with blas.single_threaded_blas():
            assert _blas_threads() == [1] * len(before)
            a = np.arange(16.0).reshape(4, 4)
            assert (a @ a)[0, 0] == 56.0  # 0*0 + 1*4 + 2*8 + 3*12, hand-computed
    assert _blas_threads() == before


def test_unpinned_reasons():
    lib = {"user_api": "blas", "prefix": "libopenblas", "filepath": "/x/libopenblas.so", "num_threads": 1}
    assert blas.unpinned([lib, {**lib, "prefix": "libmkl_rt"}]) is None
    assert blas.unpinned([{"user_api": "openmp", "num_threads": 4}]) == "threadpoolctl found no BLAS library"
    assert blas.unpinned([]) == "threadpoolctl found no BLAS library"
    assert blas.unpinned([lib, {**lib, "num_threads": 4}]) == \
        "BLAS kept more than one thread: libopenblas (/x/libopenblas.so): 4 threads"


def test_warns_once_when_threads_cannot_be_pinned(monkeypatch):
    monkeypatch.setattr(blas, "threadpool_info", lambda: [])  # as if no BLAS library were loaded
    monkeypatch.setattr(blas, "_WARNED", False)
    with pytest.warns(blas.UnpinnedThreadsWarning, match="found no BLAS library"):
        with blas.single_threaded_blas():
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second time: silent
        with blas.single_threaded_blas():
            pass
