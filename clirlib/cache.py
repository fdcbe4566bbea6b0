"""Cache entries of ``experiments`` checked on read: schema, checksum, quarantine, stale files.

An entry under ``results/runs/`` is a JSON object; a damaged one must never be used and
never be fatal. :func:`read_entry` returns the record only when it passes
:func:`check_entry`:

- it is a JSON object with the required keys (``REQUIRED``; a record of a run stopped by a
  non-finite loss has ``ERROR_REQUIRED`` instead), its ``key`` is the file's key;
- the config inside equals the config asked for, field by field (fields added after the
  cache existed, ``train.KEY_DEFAULTS``, may be absent when the asked value is their default);
- every test / dev metric of ``metrics.METRIC_NAMES`` and ``dev_chance`` is a finite number
  in [0, 1]; the history is a non-empty list with ``1 <= best_epoch <= epochs_run = len(history)``;
  the per-query table's columns have one common, non-zero length;
- ``checksum`` is the SHA-256 of the rest of the entry (``json.dumps(..., sort_keys=True)``).
  Every entry of this ``CACHE_VERSION`` was written with one (checksums came first), so an
  entry without one was edited: it fails like a wrong one.

An entry that fails (unreadable, not UTF-8, not JSON, a directory in its place, a failed
check) is moved to ``results/runs/quarantine/`` with a :class:`CacheEntryWarning` naming
the problem, and the run is recomputed. Entries are written by :mod:`clirlib.atomic`.
:func:`clean_stale` removes temporary files and folders that killed writers left behind:
only those whose writer is gone (the PID in the name is not alive, or, for a name without
a PID, no process holds the ``flock`` every writer of :mod:`clirlib.atomic` holds), never
by age alone: a live writer's temporary files are never removed, however old.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import shutil
import time
import warnings
from pathlib import Path
from typing import Any

from . import atomic

#: Bump when a change of the code changes results, so old cache entries are not reused.
CACHE_VERSION = 5  # 5: the run field `data` became `dataset` (old entries are misses)
#: Keys every finished-run entry holds.
REQUIRED = ("key", "config", "test", "dev", "dev_chance", "best_epoch", "epochs_run", "history",
            "test_per_query", "data_info", "created")
#: Keys of the entry of a run stopped by ``NonFiniteError`` (``run(allow_nonfinite=True)``).
ERROR_REQUIRED = ("key", "config", "error", "created")
QUARANTINE = "quarantine"


class CacheEntryError(ValueError):
    """A cache entry fails a check; the message says which."""


class CacheEntryWarning(UserWarning):
    """A damaged cache entry was moved aside and will be recomputed."""


def checksum(record: dict[str, Any]) -> str:
    """SHA-256 of the entry without its ``checksum`` field (sorted keys, as written)."""
    body = {k: v for k, v in record.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def with_checksum(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "checksum": checksum(record)}


def _unit(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
        raise CacheEntryError(f"{name} is {v!r}, not a finite number in [0, 1]")


def check_entry(record: Any, key: str, config: dict[str, Any], key_defaults: dict[str, Any],
                metric_names, trained: bool = True) -> None:
    """Raise ``CacheEntryError`` when ``record`` is not a valid entry for ``key`` / ``config``
    (every entry of this ``CACHE_VERSION`` carries its checksum: one without was edited).
    ``trained=False`` (systems fitted without epochs, such as BM25) allows an empty history."""
    if not isinstance(record, dict):
        raise CacheEntryError(f"not a JSON object but {type(record).__name__}")
    required = ERROR_REQUIRED if "error" in record else REQUIRED
    missing = [k for k in required if k not in record]
    if missing:
        raise CacheEntryError(f"missing keys {', '.join(missing)}")
    if "checksum" not in record:  # entries have had one since before CACHE_VERSION 5
        raise CacheEntryError("no checksum (every entry written by this cache version has one)")
    if record["checksum"] != checksum(record):
        raise CacheEntryError("checksum does not match the content")
    if record["key"] != key:
        raise CacheEntryError(f"key {record['key']!r} is not the file's key {key!r}")
    got = record["config"]
    if not isinstance(got, dict):
        raise CacheEntryError("config is not an object")
    for name, want in config.items():
        if name not in got:
            if name in key_defaults and want == key_defaults[name]:
                continue
            raise CacheEntryError(f"config has no {name!r}")
        if got[name] != want:
            raise CacheEntryError(f"config {name} = {got[name]!r}, but {want!r} was asked for")
    extra = sorted(set(got) - set(config))
    if extra:
        raise CacheEntryError(f"config has unknown fields {', '.join(extra)}")
    if "error" in record:
        return
    for split in ("test", "dev"):
        if not isinstance(record[split], dict):
            raise CacheEntryError(f"{split} metrics are not an object")
        for m in metric_names:
            if m not in record[split]:
                raise CacheEntryError(f"{split} metrics lack {m}")
            _unit(f"{split} {m}", record[split][m])
    _unit("dev_chance", record["dev_chance"])
    hist = record["history"]
    if not isinstance(hist, list) or not (hist or not trained) or not all(isinstance(h, dict) for h in hist):
        raise CacheEntryError("history is not a non-empty list of epochs")
    if record["epochs_run"] != len(hist):
        raise CacheEntryError(f"epochs_run {record['epochs_run']!r} but {len(hist)} epochs in the history")
    best = record["best_epoch"]
    if isinstance(best, bool) or not isinstance(best, int) or not (1 if hist else 0) <= best <= len(hist):
        raise CacheEntryError(f"best_epoch {best!r} is not in 1..{len(hist)}")
    pq = record["test_per_query"]
    if not isinstance(pq, dict) or not pq or not all(isinstance(c, list) for c in pq.values()):
        raise CacheEntryError("test_per_query is not a table of columns")
    lengths = {len(c) for c in pq.values()}
    if len(lengths) != 1 or 0 in lengths:
        raise CacheEntryError(f"test_per_query columns have lengths {sorted(lengths)}")


def quarantine(path: Path, problem: str) -> Path | None:
    """Move ``path`` to ``<its folder>/quarantine/`` (timestamped) with a warning; never raises."""
    qdir = path.parent / QUARANTINE
    dest = qdir / f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.{os.getpid()}"
    try:
        qdir.mkdir(exist_ok=True)
        os.replace(path, dest) if not path.is_dir() else shutil.move(str(path), str(dest))
    except OSError:
        dest = None
        try:  # cannot move it: remove it, the run is recomputed either way
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        except OSError:
            pass
    where = f"moved to {dest}" if dest else "removed"
    warnings.warn(f"cache entry {path} is damaged ({problem}); {where}, recomputing", CacheEntryWarning,
                  stacklevel=3)
    return dest


def read_entry(path: Path, key: str, config: dict[str, Any], key_defaults: dict[str, Any],
               metric_names, trained: bool = True) -> dict[str, Any] | None:
    """The valid record at ``path``, or ``None`` (absent, or damaged and quarantined)."""
    if not os.path.lexists(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        check_entry(record, key, config, key_defaults, metric_names, trained)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, CacheEntryError, RecursionError) as e:
        if isinstance(e, OSError) and not (isinstance(e, (IsADirectoryError, FileNotFoundError)) or e.errno == errno.ELOOP):
            # the machine's trouble (permissions, too many open files, an I/O error), not the
            # entry's: keep the finished run and say so, instead of moving it aside
            raise OSError(e.errno, f"cannot read cache entry {path}: {e.strerror or e}") from None
        problem = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0] or type(e).__name__
        quarantine(path, f"{type(e).__name__}: {problem}" if not isinstance(e, CacheEntryError) else problem)
        return None
    return record


def write_entry(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` with its checksum atomically (:mod:`clirlib.atomic`: a temporary file
    named after this process, so :func:`clean_stale` can tell whether its writer is alive,
    then a rename)."""
    record = with_checksum(record)
    with atomic.replacing(path) as f:
        json.dump(record, f, indent=1, sort_keys=True)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _writer_pid(name: str) -> int | None:
    """The PID in a temporary name: ``...pid<N>....tmp`` (:mod:`clirlib.atomic`) or
    ``.tmp-<root>-<N>-<hex>`` / ``.stale-<root>-<N>-<hex>`` (the benchmark generator)."""
    parts = name.split(".")
    for part in parts:
        if part.startswith("pid") and part[3:].isdigit():
            return int(part[3:])
    if name.startswith((".tmp-", ".stale-")):
        fields = name.split("-")
        if len(fields) >= 3 and fields[-2].isdigit():
            return int(fields[-2])
    return None


def _lock_free(path: Path) -> bool | None:
    """Whether no process holds a ``flock`` on ``path`` (a file or a folder): True, False
    when one does, None when this cannot be told (it cannot be opened, or its file system
    refuses the probe: Linux NFS emulates ``flock`` with POSIX locks, which a read-only
    handle cannot take)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return False if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES) else None
    finally:
        os.close(fd)  # closing releases the probe's own lock
    return True


def is_stale(path: Path) -> bool:
    """A temporary file or folder whose writer is gone. With a PID in its name: that PID is
    neither this process nor alive here, and nobody holds its lock (a PID names a process of
    one machine: a writer on another machine of a cluster sharing the folder is known by its
    lock), or the lock cannot be probed (then the PID alone decides). Without one: nobody holds
    its lock. Never by age: a live writer may take hours (a large benchmark, a long run)."""
    pid = _writer_pid(path.name)
    if pid is not None and (pid == os.getpid() or _pid_alive(pid)):
        return False
    if not os.path.lexists(path):
        return False
    free = _lock_free(path)
    return free is not False if pid is not None else free is True


def clean_stale(folder: Path, patterns=("*.tmp",)) -> list[Path]:
    """Remove the stale temporary files / folders matching ``patterns`` in ``folder``."""
    removed = []
    if not folder.is_dir():
        return removed
    for pattern in patterns:
        for p in sorted(folder.glob(pattern)):
            if not is_stale(p):
                continue
            try:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
                removed.append(p)
            except FileNotFoundError:
                pass  # another process cleaned it first
    return removed
