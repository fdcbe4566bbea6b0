"""Atomic file writes: the one way every file of the product is written (issue 28).

A writer never opens its destination for writing. :func:`write_bytes` /
:func:`write_text` / :func:`replacing` write a temporary file in the destination's folder
(named ``<name>.pid<PID>.<random>.tmp`` and locked with ``flock`` while it is written, so
:func:`clirlib.cache.clean_stale` can tell a live writer from a dead one), flush it,
``fsync`` it and rename it over the destination: a reader sees the old file or the new one,
never a cut one. A failed write (a full disk, a read-only folder) removes the temporary
file, leaves the old file as it was and raises :class:`WriteError`, whose one-line message
names the file and says "disk full" or the OS's words. A writer killed mid-write leaves its
temporary file; the next write of the same destination removes it (``clean_stale``: its PID
dead and its lock free).

A destination that exists and is not a regular file (``/dev/stdout``, ``/dev/null``, a FIFO)
cannot be replaced by a rename: it is written in place. A symbolic link is followed (its
target is replaced, the link stays). A new file gets the permissions ``open`` would give it
(``0o666`` less the umask); a replaced file keeps its own.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import glob
import os
import shutil
import stat
import tempfile
import uuid
from pathlib import Path
from typing import IO, Iterator

#: Suffix of every temporary file of this module (``cache.clean_stale`` looks for it).
TMP_SUFFIX = ".tmp"


class WriteError(OSError):
    """A file could not be written; the old file (if any) is unchanged. One line."""

    def __init__(self, path: str | os.PathLike, cause: OSError):
        super().__init__(cause.errno, cause.strerror, str(path))
        self.path = str(path)
        self.cause = cause

    def __str__(self) -> str:
        return f"cannot write {self.path}: {describe(self.cause)}"


def describe(e: OSError) -> str:
    """A short account of an OS error: ``disk full (...)`` for ENOSPC / EDQUOT, else its words."""
    what = e.strerror or str(e) or type(e).__name__
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"disk full ({what})"
    return what


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def tmp_prefix(path: Path) -> str:
    """``<name>.pid<PID>.``: the start of a temporary file's name (the PID says whose it is)."""
    return f"{path.name}.pid{os.getpid()}."


@contextlib.contextmanager
def replacing(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8",
              newline: str | None = None) -> Iterator[IO]:
    """``with replacing(path) as f: f.write(...)``: ``path`` replaced when the block ends
    without an error; an error inside the block or while writing leaves the old file."""
    target = Path(path)
    if target.is_symlink():
        target = target.resolve()
    binary = "b" in mode
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise WriteError(path, e) from None
    if st is not None and not stat.S_ISREG(st.st_mode):  # a device or a pipe: in place
        try:
            with open(target, "wb" if binary else "w", **({} if binary else {"encoding": encoding, "newline": newline})) as f:
                yield f
        except OSError as e:
            raise WriteError(path, e) from None
        return
    try:
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=tmp_prefix(target), suffix=TMP_SUFFIX)
    except OSError as e:
        raise WriteError(path, e) from None
    done = False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held until the file is renamed (clean_stale)
        os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else _umask_mode())
        raw = os.fdopen(fd, "wb" if binary else "w", closefd=False,
                        **({} if binary else {"encoding": encoding, "newline": newline}))
        with raw:
            yield raw
            raw.flush()
            os.fsync(fd)
        os.replace(tmp, target)
        done = True
    except OSError as e:
        raise WriteError(path, e) from None
    finally:
        os.close(fd)
        if not done:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    from .cache import clean_stale  # cache builds on this module: imported when first needed

    with contextlib.suppress(OSError):  # a killed writer's temporary file of this destination (never a live one's)
        clean_stale(target.parent, patterns=(glob.escape(target.name) + ".pid*" + TMP_SUFFIX,))


def probe_folder(folder: str | os.PathLike) -> None:
    """Raise :class:`WriteError` naming ``folder`` unless a file can be created in it: a real
    probe (a nameless temporary file), since ``os.access`` says yes to root on a read-only mount."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise WriteError(folder, e) from None


@contextlib.contextmanager
def lock_beside(path: str | os.PathLike) -> Iterator[None]:
    """An exclusive ``flock`` on ``<path>.lock`` (created if missing) while the block runs,
    waiting for it; the kernel releases it when the block ends or the process dies."""
    path = Path(path)
    with open(path.with_name(path.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def lock_folder(folder: str | os.PathLike) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` itself while the block runs, waiting for it, where
    the file system allows: Linux NFS emulates ``flock`` with POSIX locks, which a folder's
    read-only handle cannot take, and there the block runs unlocked."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            if e.errno not in (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        yield
    finally:
        os.close(fd)  # releases the lock


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Replace ``path`` by ``data`` atomically (see the module docstring)."""
    with replacing(path, "wb", encoding=None) as f:
        f.write(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8", newline: str | None = None) -> Path:
    """Replace ``path`` by ``text`` atomically (see the module docstring)."""
    with replacing(path, "w", encoding=encoding, newline=newline) as f:
        f.write(text)
    return Path(path)


@contextlib.contextmanager
def temp_folder(dest: str | os.PathLike) -> Iterator[Path]:
    """An empty folder ``.tmp-<name>-<PID>-<random>`` beside ``dest``, locked with ``flock`` while
    the block runs where the file system allows (``cache.clean_stale`` reads the PID and the
    lock) and removed with what is left in it when the block ends; fill it, then
    :func:`replace_folder`."""
    dest = Path(dest)
    tmp = dest.parent / f".tmp-{dest.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    fd = None
    try:
        fd = os.open(tmp, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held while it is filled (clean_stale)
        except OSError as e:  # a file system without flock on folders (NFS): the PID in the name remains
            if e.errno not in (errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                raise
        yield tmp
    finally:
        if fd is not None:
            os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)


def replace_folder(src: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Rename folder ``src`` to ``dest``; an existing ``dest`` is first renamed aside
    (``.stale-<name>-<PID>-<random>``), and removed once ``src`` is in its place: ``dest`` is
    missing only between two renames (never while a large folder is being deleted), and a
    failed second rename puts the old folder back."""
    dest = Path(dest)
    stale = None
    if dest.exists():
        stale = dest.parent / f".stale-{dest.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        os.rename(dest, stale)
    try:
        os.rename(src, dest)
    except BaseException:
        if stale is not None:
            os.rename(stale, dest)
        raise
    if stale is not None:
        shutil.rmtree(stale, ignore_errors=True)
