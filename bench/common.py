"""Shared pieces of the benchmarks: machine facts, copy bandwidth, synthetic data, timing.

Nothing here is part of clirlib; the benchmarks import clirlib like any user would.
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
WORK_DIR = BENCH_DIR / "_work"  # scratch space (git-ignored)

THREADS = 2


def user_root() -> Path:
    """The root clirlib would use (``CLIRLIB_HOME``; unset or empty: this checkout), read now by
    ``clirlib.env`` without importing ``clirlib.paths``, which a script may first point elsewhere."""
    from clirlib import env

    return env.home(ROOT)


def set_threads(n: int = THREADS) -> None:
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


def machine() -> dict[str, str]:
    """CPU model, cores, memory, library versions and the load when measured."""
    from clirlib.runs.shipped import cpu_name  # the records' own name for the CPU

    cpu = cpu_name()
    mem = "?"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 2**20:.1f} GiB"
                break
    except OSError:
        pass
    load = "?"
    if hasattr(os, "getloadavg"):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    import numpy
    return {
        "cpu": cpu, "cores": str(os.cpu_count()), "memory": mem, "threads": str(torch.get_num_threads()),
        "python": platform.python_version(), "torch": torch.__version__, "numpy": numpy.__version__,
        "os": f"{platform.system()} {platform.release()}", "load average (1/5/15 min)": load,
    }


def copy_bandwidth(mb: int = 256, repeats: int = 10) -> float:
    """Best observed copy bandwidth in bytes/s, counting read + write (``dst.copy_(src)``)."""
    n = mb * 2**20 // 4
    src = torch.rand(n)
    dst = torch.empty_like(src)
    dst.copy_(src)  # fault the pages in
    best = math_inf = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - t0)
    assert best < math_inf
    return 2 * n * 4 / best


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """This machine's float32 matrix-product rate at the current torch thread count: best of
    ``repeats`` ``torch.mm`` of two n x n matrices, 2 n^3 floating-point operations each."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    out = torch.empty(n, n)
    torch.mm(a, b, out=out)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b, out=out)
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best / 1e9


def median(xs) -> float:
    return float(statistics.median(xs))


def zipf_ids(gen: np.random.Generator, n: int, vocab: int, s: float = 1.0, first: int = 2) -> np.ndarray:
    """``n`` token ids in ``[first, vocab)`` with Zipf(s) frequencies, id ``first`` the most frequent.

    Ids are ranked by frequency, as in a vocabulary built from counts (0 = <PAD>, 1 = <UNK>).
    """
    ranks = np.arange(1, vocab - first + 1, dtype=np.float64)
    cdf = np.cumsum(ranks ** -s)
    cdf /= cdf[-1]
    return first + np.searchsorted(cdf, gen.random(n), side="right").clip(max=vocab - first - 1)


def texts(gen: np.random.Generator, n: int, lo: int, hi: int, vocab: int):
    """``n`` texts of ``lo``-``hi`` tokens (uniform lengths, Zipf ids) as a clirlib ``Ragged``."""
    from clirlib.data.dataset import Ragged

    lengths = gen.integers(lo, hi + 1, size=n)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return Ragged(zipf_ids(gen, int(offsets[-1]), vocab), offsets)


def training_dataset(vocab: int, n_train_pairs: int, *, n_queries: int = 2000, n_docs: int = 20000,
                     seed: int = 0, eval_queries: int = 16, candidates: int = 44,
                     doc_tokens: tuple[int, int] = (50, 300)):
    """A RankingDataset for the training benchmark (the issue's shapes: queries 8-30 tokens,
    documents 50-300, ``vocab`` ids per language, dimension 64).

    Training pairs are random (query, document) pairs with labels in the proportions of the
    paper's candidate lists (1 MR, 3 SR, 40 NR); dev and test are small (``eval_queries``
    queries x ``candidates``) so the per-epoch evaluation stays a negligible part of an epoch.
    """
    from clirlib.data.dataset import RankingDataset, Split, Vocab

    gen = np.random.default_rng(seed)
    queries = texts(gen, n_queries, 8, 30, vocab)
    docs = texts(gen, n_docs, *doc_tokens, vocab)
    label_p = np.array([40, 3, 1], dtype=np.float64) / 44

    def pairs(n):
        return Split(gen.integers(0, n_queries, n), gen.integers(0, n_docs, n), gen.choice(3, size=n, p=label_p))

    def ranked(q0):
        qs = np.repeat(np.arange(q0, q0 + eval_queries), candidates)
        labels = np.tile(np.r_[2, 1, 1, 1, np.zeros(candidates - 4, dtype=np.int64)], eval_queries)
        return Split(qs, gen.integers(0, n_docs, len(qs)), labels)

    itos = ["<PAD>", "<UNK>"] + [f"w{i}" for i in range(vocab - 2)]
    return RankingDataset(
        lang="xx", query_ids=[f"q{i}" for i in range(n_queries)], doc_ids=[f"d{i}" for i in range(n_docs)],
        queries=queries, docs=docs, q_vocab=Vocab(list(itos)), d_vocab=Vocab(itos),
        splits={"train": pairs(n_train_pairs), "dev": ranked(0), "test": ranked(eval_queries)},
        q_vectors=None, d_vectors=None, info={"source": "bench"},
    )


class Timer:
    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0


def _tree(root: int) -> set[int]:
    """``root`` and every process descended from it (read from /proc's parent pids)."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(d.name))
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        out.add(pid)
        todo += children.get(pid, [])
    return out


def other_running(samples: int = 5, interval: float = 0.01, own_tree: int | None = None) -> float:
    """Mean number of other processes' threads ready to run (state R), over a few samples.

    The load average mixes in the benchmark's own threads; this counts only the rest, as a
    measure of how much other work competed for the 2 cores while a number was measured.
    ``own_tree``: a pid whose whole process tree (a measured child and its kernels) is the
    benchmark's own, not counted either.
    """
    me = os.getpid()
    total = 0
    for k in range(samples):
        n = 0
        # rebuilt at each sample: the measured tree starts and ends processes as it runs
        # (notebook kernels, the worker processes of grid_runs.system_runs)
        mine = _tree(own_tree) if own_tree is not None else set()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == me or int(d.name) in mine:
                continue
            try:
                for t in (d / "task").iterdir():
                    stat = (t / "stat").read_text()
                    if stat[stat.rindex(")") + 2] == "R":
                        n += 1
            except (OSError, ValueError):
                continue
        total += n
        if k + 1 < samples:
            time.sleep(interval)
    return total / samples


def output_files(base: Path, subs: tuple[str, ...] = ("tables", "figures")) -> dict[str, bytes]:
    """Every file under ``base``'s ``subs`` folders, by path relative to ``base``."""
    return {str(p.relative_to(base)): p.read_bytes()
            for sub in subs for p in sorted((base / sub).rglob("*")) if p.is_file()}


def differing_files(a: dict[str, bytes], b: dict[str, bytes], names: tuple[str, str] = ("a", "b")) -> list[str]:
    """Paths whose bytes differ between two runs' outputs (:func:`output_files`), in sorted
    order; a path found in one only is marked "(only in <its run's name>)"."""
    out = []
    for path in sorted(set(a) | set(b)):
        if path not in a or path not in b:
            out.append(f"{path} (only in {names[0] if path in a else names[1]})")
        elif a[path] != b[path]:
            out.append(path)
    return out


def wait_quiet(max_seconds: float, threshold: float = 0.5, poll: float = 1.0) -> float:
    """Wait (at most ``max_seconds``) until fewer than ``threshold`` other threads are
    runnable; returns the seconds waited."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < max_seconds and other_running(samples=3) >= threshold:
        time.sleep(poll)
    return time.perf_counter() - t0


def proc_status_mb(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` of this process from /proc/self/status, in MiB (nan if absent)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


# --------------------------------------------------------------------------- report helpers
_T0 = time.perf_counter()


def log(msg: str) -> None:
    """A progress line with the seconds since the benchmarks started."""
    print(f"[bench {time.perf_counter() - _T0:5.0f}s] {msg}", flush=True)


def fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def yes(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "**no**")
