"""Content digests of the files a run reads, so a record says what it was trained on and a
changed file is a cache miss.

``file_digest`` is the SHA-256 of a file's bytes, computed once per (path, size, mtime):
memoised in the process and, for files of ``DISK_MEMO_MIN_BYTES`` or more, in a small JSON
memo ``results/digests.json`` shared by the processes of one checkout (the notebook
kernels of ``reproduce`` would otherwise each read the 1.9-million-document French file
again). A file rewritten with the same size and the same modification time would keep its
old digest; editors, ``cp``, ``shuf > file`` and downloads all change the time.
``input_digests`` gives the digests of a list of files keyed by their path relative to the
dataset's root, so the same files in another folder give the same digests.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from .. import atomic, paths
from .errors import MissingDataError, check_regular_file

_MEMO: dict[tuple[str, int, int], str] = {}
CHUNK = 1 << 20
#: Files at least this large have their digest kept on disk too (smaller ones are quick to read).
DISK_MEMO_MIN_BYTES = 1 << 24
_disk: dict[str, str] | None = None


def disk_memo_path() -> Path:
    return paths.RESULTS_DIR / "digests.json"


def _read_memo() -> dict[str, str]:
    try:
        loaded = json.loads(disk_memo_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent or damaged: start again (it is only a memo)
        return {}
    return {k: v for k, v in loaded.items() if isinstance(v, str) and v.startswith("sha256:")} \
        if isinstance(loaded, dict) else {}


def _disk_memo() -> dict[str, str]:
    global _disk
    if _disk is None:
        _disk = _read_memo()
    return _disk


def _remember(name: str, digest: str) -> None:
    """Add one digest to the file, merged with what other processes wrote since this one read it
    (under an ``flock`` on ``digests.json.lock``): the last writer no longer drops the others'."""
    global _disk
    try:
        disk_memo_path().parent.mkdir(parents=True, exist_ok=True)
        with atomic.lock_beside(disk_memo_path()):
            _disk = {**_disk_memo(), **_read_memo(), name: digest}
            atomic.write_text(disk_memo_path(), json.dumps(_disk, indent=0, sort_keys=True))
    except OSError:
        _disk_memo()[name] = digest  # a memo that cannot be written only costs a re-read


def file_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of the file's bytes (memoised on path, size and mtime)."""
    p = Path(path)
    if not check_regular_file(p):  # a FIFO would block the read below: refused by name
        raise MissingDataError("file not found", p)
    st = os.stat(p)
    memo_key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if memo_key not in _MEMO:
        disk_key = "\t".join(map(str, memo_key))
        big = st.st_size >= DISK_MEMO_MIN_BYTES
        if big and disk_key in _disk_memo():
            _MEMO[memo_key] = _disk_memo()[disk_key]
            return _MEMO[memo_key]
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                h.update(block)
        _MEMO[memo_key] = "sha256:" + h.hexdigest()
        if big:
            _remember(disk_key, _MEMO[memo_key])
    return _MEMO[memo_key]


def folder_digests(folder: str | Path) -> dict[str, str]:
    """``{name: digest}`` of the regular files directly in ``folder``, sorted by name: what a
    local model folder is (config, weights, tokenizer), whatever the folder is called."""
    return {p.name: file_digest(p) for p in sorted(Path(folder).expanduser().iterdir()) if p.is_file()}


def input_digests(root: str | Path, files: list[str | Path]) -> dict[str, str]:
    """``{path relative to root (or the file's name): digest}`` of ``files``, sorted by name."""
    base = Path(root).resolve()
    out = {}
    for f in files:
        p = Path(f).resolve()
        try:
            name = p.relative_to(base).as_posix()
        except ValueError:
            name = p.name
        out[name] = file_digest(p)
    return dict(sorted(out.items()))
