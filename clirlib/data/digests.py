"""Content digests of the files a run reads, so a record says what it was trained on.

``file_digest`` is the SHA-256 of a file's bytes, computed once per (path, size, mtime)
in a process. ``input_digests`` names the files the WikiCLIR reader and the Polyglot
loader read for one dataset (queries, documents, qrels, the two embedding files) and
gives their digests keyed by their path relative to the dataset's root, so the same
files in another folder give the same digests.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_MEMO: dict[tuple[str, int, int], str] = {}
CHUNK = 1 << 20


def file_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of the file's bytes (memoised on path, size and mtime)."""
    p = Path(path)
    st = os.stat(p)
    memo_key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    if memo_key not in _MEMO:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(CHUNK), b""):
                h.update(block)
        _MEMO[memo_key] = "sha256:" + h.hexdigest()
    return _MEMO[memo_key]


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
