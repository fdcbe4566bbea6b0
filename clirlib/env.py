"""Every environment variable clirlib reads, in one place.

========================  ==========================================================
``CLIRLIB_HOME``          repository root for ``data/``, ``results/``, ``figures/``,
                          ``tables/``, and for what ``reproduce`` reads and updates:
                          ``notebooks/``, ``records/``, ``README.md`` (default: the
                          folder above the package); relative ``--data`` folders are
                          taken from the working folder, as usual on a command line
``CLIRLIB_FORCE``         ``1``: retrain instead of reading the ``results/`` cache
                          (``make reproduce FORCE=1``)
``CLIRLIB_FORCE_SINCE``   a forced run reads back the local entries written since this
                          Unix time (``reproduce --force`` sets it: a resumable retrain)
``CLIRLIB_PROGRESS``      ``0``: no progress bars (headless notebook runs set it);
                          ``1`` or unset: bars when the output is a terminal
``CI``                    set (to anything): no progress bars
``CLIRLIB_THREADS``       torch CPU threads (default 2, the target machines' cores)
``CLIRLIB_DEVICE``        where the paper's ranker trains: ``auto`` (default: the GPU
                          when torch sees one, else the CPU), ``cpu`` or ``cuda``; the
                          tests run ``cpu`` (their numbers are CPU results)
``IR_DATASETS_HOME``      ir_datasets' cache, searched for WikiCLIR
                          (default ``~/.ir_datasets``)
``CLIRLIB_EXECUTOR``      ``serial`` (default) or ``ray``: how experiment grids run
                          (``make reproduce EXECUTOR=ray`` sets it for the kernels)
``RAY_ADDRESS``           an existing Ray cluster to run the grids on (Ray's own name)
``RAY_USE_TLS``           Ray's own: ``1`` or ``true`` when the cluster's gRPC uses TLS
                          (the address probe then checks the connection only)
``CLIRLIB_SYSTEM_WORKERS`` processes that train the uncached runs of a grid of whole
                          systems at once (``grid_runs.system_runs``; default: 2, or
                          1 on a one-core machine); the numbers do not depend on it
``CLIRLIB_RECORDS_READ``  a file (relative: to the repository root): every run key
                          the cache looks up is appended to it (``python -m clirlib
                          records prune`` lists, with ``--apply`` drops, the others)
========================  ==========================================================

The benchmarks (``bench/``, ``make bench``; not clirlib's own, so :func:`check` leaves them to
``bench/run_all.py``, which reads them at its start) have three switches, read here too
(:func:`bench_switch`): ``BENCH_QUICK`` (``--quick``), ``BENCH_REPRODUCE`` (``--reproduce``)
and ``BENCH_RAY_IDENTITY`` (the two ci reproduces of ``bench/ray_identity.py``).

Switches take ``0`` or ``1``; any other value raises, naming the variable, as does a
``CLIRLIB_`` variable not in the table. :func:`check` reads and checks every variable above
at once; the command line and ``notebook.setup`` call it before any work starts, so a bad
value is one line at the start, never a failure after hours of training. The library
writes two variables, both with ``setdefault`` so a user's value wins: ``CLIRLIB_PROGRESS=0``
for the notebook kernels it starts (:func:`quiet_children`) and ``CUBLAS_WORKSPACE_CONFIG``
for deterministic GPU matmuls (``clirlib.determinism``).
"""

from __future__ import annotations

import contextlib
import math
import os
from pathlib import Path
from typing import Iterator

HOME, FORCE, PROGRESS, CI, THREADS, IR_DATASETS_HOME, EXECUTOR, RAY_ADDRESS, SYSTEM_WORKERS = (
    "CLIRLIB_HOME", "CLIRLIB_FORCE", "CLIRLIB_PROGRESS", "CI", "CLIRLIB_THREADS", "IR_DATASETS_HOME",
    "CLIRLIB_EXECUTOR", "RAY_ADDRESS", "CLIRLIB_SYSTEM_WORKERS")
FORCE_SINCE = "CLIRLIB_FORCE_SINCE"
DEVICE = "CLIRLIB_DEVICE"
RAY_USE_TLS = "RAY_USE_TLS"
RECORDS_READ = "CLIRLIB_RECORDS_READ"
BENCH_QUICK, BENCH_REPRODUCE, BENCH_RAY_IDENTITY = "BENCH_QUICK", "BENCH_REPRODUCE", "BENCH_RAY_IDENTITY"
#: The benchmarks' switches (``bench/``), read by :func:`bench_switch`.
BENCH_SWITCHES = (BENCH_QUICK, BENCH_REPRODUCE, BENCH_RAY_IDENTITY)
#: The ``CLIRLIB_`` variables of the table above: :func:`check` refuses any other (a misspelt one was ignored).
KNOWN = (HOME, FORCE, FORCE_SINCE, PROGRESS, THREADS, DEVICE, EXECUTOR, SYSTEM_WORKERS, RECORDS_READ)


def _switch(name: str) -> bool | None:
    """``True`` / ``False`` for ``1`` / ``0``, ``None`` when unset or empty."""
    value = os.environ.get(name, "").strip()
    if value == "":
        return None
    if value not in ("0", "1"):
        raise ValueError(f"environment variable {name}={value!r}: use 0 or 1")
    return value == "1"


def bench_switch(name: str) -> bool:
    """A benchmark switch of ``BENCH_SWITCHES``: ``1`` on; ``0``, unset or empty off; any other
    value raises naming it (``BENCH_QUICK=true`` was silently off)."""
    if name not in BENCH_SWITCHES:
        raise ValueError(f"unknown benchmark switch {name!r}; choose one of {', '.join(BENCH_SWITCHES)}")
    return bool(_switch(name))


def home(default: Path) -> Path:
    """The repository root: ``CLIRLIB_HOME`` or, unset or empty as every variable here, ``default``
    (an empty value was the working folder). A relative value is made absolute here, against this
    process's working folder, and so exported: a child started elsewhere (``reproduce`` starts its
    kernels in ``notebooks/``) reads the same root."""
    value = os.environ.get(HOME, "").strip()
    if not value:
        return Path(default).resolve()
    root = Path(value).expanduser().resolve()
    if not Path(value).expanduser().is_absolute():
        os.environ[HOME] = str(root)
    return root


def home_note(folder: str) -> str:
    """`` (CLIRLIB_HOME moves <folder> with the root)`` when ``CLIRLIB_HOME`` is set, as :func:`home`
    reads it (an empty value is unset), else ``""``: for errors about a folder that is missing."""
    return f" ({HOME} moves {folder} with the root)" if os.environ.get(HOME, "").strip() else ""


def force() -> bool:
    """``CLIRLIB_FORCE=1``: retrain instead of reading the cache."""
    return bool(_switch(FORCE))


def force_since() -> float | None:
    """``CLIRLIB_FORCE_SINCE``: the Unix time a forced retrain started, or None."""
    value = os.environ.get(FORCE_SINCE, "").strip()
    if not value:
        return None
    try:
        return unix_time(value)
    except ValueError:
        raise ValueError(f"environment variable {FORCE_SINCE}={value!r}: use a Unix time in seconds") from None


#: 1 January 3000, in seconds: no later time is a run's start (and time.ctime fails near 1e17).
MAX_UNIX_TIME = 32_503_680_000


def unix_time(text: str) -> float:
    """``text`` as a Unix time in seconds; ValueError unless a number from 0 to ``MAX_UNIX_TIME``
    (a NaN or -inf would be earlier than no file, and every cached entry would pass as retrained)."""
    value = float(text)
    if not math.isfinite(value) or value < 0 or value > MAX_UNIX_TIME:
        raise ValueError(f"{text!r} is not a Unix time in seconds")
    return value


def progress_disabled() -> bool | None:
    """``disable`` for tqdm: ``True`` under ``CLIRLIB_PROGRESS=0``, or under ``CI`` unless
    ``CLIRLIB_PROGRESS=1`` asks for bars; else ``None``.

    tqdm's ``disable=None`` hides bars when output is not a terminal (papermill, nbval).
    """
    choice = _switch(PROGRESS)
    if choice is False or (choice is None and os.environ.get(CI)):
        return True
    return None


def _positive(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    try:
        n = int(value) if value else default
    except ValueError:
        raise ValueError(f"environment variable {name}={value!r}: use a positive integer") from None
    if n < 1:
        raise ValueError(f"environment variable {name}={value!r}: use a positive integer")
    return n


def threads(default: int = 2) -> int:
    """Torch CPU threads: ``CLIRLIB_THREADS`` or ``default``."""
    return _positive(THREADS, default)


#: Values of ``CLIRLIB_DEVICE`` (``clirlib.determinism.device``).
DEVICE_NAMES = ("auto", "cpu", "cuda")


def device_choice() -> str:
    """``CLIRLIB_DEVICE``: ``auto`` (default), ``cpu`` or ``cuda``."""
    name = os.environ.get(DEVICE, "").strip() or "auto"
    if name not in DEVICE_NAMES:
        raise ValueError(f"environment variable {DEVICE}={name!r}: use one of {', '.join(DEVICE_NAMES)}")
    return name


def system_workers() -> int:
    """Processes for a grid of whole systems: ``CLIRLIB_SYSTEM_WORKERS``, else 2 (1 on one core)."""
    return _positive(SYSTEM_WORKERS, min(2, os.cpu_count() or 1))


def ir_datasets_home() -> Path:
    """ir_datasets' cache folder, read exactly as ir_datasets reads it (``IR_DATASETS_HOME`` as
    given, else ``~/.ir_datasets``), so that clirlib looks where ``ir_datasets export`` writes;
    :func:`check` refuses the values ir_datasets would read otherwise than meant."""
    return Path(os.environ.get(IR_DATASETS_HOME, Path.home() / ".ir_datasets"))


def _literal_folder(name: str) -> None:
    """A folder variable that its reader takes literally (ir_datasets: no trimming, no ``~``):
    an empty value would be the working folder, ``~/x`` a folder named ``~``."""
    value = os.environ.get(name)
    if value is not None and (not value.strip() or value != value.strip() or value.startswith("~")):
        raise ValueError(f"environment variable {name}={value!r}: ir_datasets reads it as written (an empty "
                         f"value is the working folder, ~ is not expanded); unset it or give a full path")


def quiet_children() -> None:
    """No progress bars in the processes (notebook kernels) started from here, unless the user asked."""
    os.environ.setdefault(PROGRESS, "0")


def set_default(name: str, value: str) -> None:
    """Set ``name`` for this process and its children unless it is set already."""
    os.environ.setdefault(name, value)


#: Values of ``CLIRLIB_EXECUTOR`` and of ``reproduce --executor``: ``clirlib.runs.executors.EXECUTORS``
#: but its process pool, which the system grids choose in Python (``get_executor``).
EXECUTOR_NAMES = ("serial", "ray")


def executor() -> str:
    """The executor the grids use: ``CLIRLIB_EXECUTOR`` (default ``serial``)."""
    name = os.environ.get(EXECUTOR, "").strip() or "serial"
    if name not in EXECUTOR_NAMES:
        raise ValueError(f"environment variable {EXECUTOR}={name!r}: use one of {', '.join(EXECUTOR_NAMES)}")
    return name


def ray_address() -> str | None:
    """``RAY_ADDRESS``: an existing Ray cluster, or None."""
    return os.environ.get(RAY_ADDRESS, "").strip() or None


def ray_tls() -> bool:
    """``RAY_USE_TLS`` (Ray's own variable, read as Ray reads it): the cluster's gRPC uses TLS."""
    return os.environ.get(RAY_USE_TLS, "").strip().lower() in ("1", "true")


def check_address(address: str, name: str = RAY_ADDRESS) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address ``host:port`` (``ray://`` allowed), ``None`` for Ray's
    ``auto`` / ``local``; anything else raises naming ``name``."""
    a = address.strip()
    if a in ("auto", "local"):
        return None
    rest = a[len("ray://"):] if a.startswith("ray://") else a
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{name}={address!r}: expected <host>:<port> (e.g. 127.0.0.1:6379)")
    return host.strip("[]"), int(port)


#: The repository root when ``CLIRLIB_HOME`` is unset (``paths.ROOT``'s default; paths imports this module).
_DEFAULT_ROOT = Path(__file__).resolve().parent.parent


def from_root(value: str, root: Path | None = None) -> Path:
    """``value`` as a path; a relative one is taken from ``root`` (default: the repository
    root, ``CLIRLIB_HOME``), never from the working folder (notebook kernels run in
    ``notebooks/``)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (root if root is not None else home(_DEFAULT_ROOT)) / path


def records_read_log(root: Path | None = None) -> Path | None:
    """``CLIRLIB_RECORDS_READ``: the file the cache appends the keys it looks up to, or None;
    a relative path is taken from ``root`` (:func:`from_root`)."""
    value = os.environ.get(RECORDS_READ, "").strip()
    if not value:
        return None
    path = from_root(value, root)
    if path.is_dir():
        raise ValueError(f"environment variable {RECORDS_READ}={value!r}: is a folder, not a file")
    if not path.parent.is_dir():
        raise ValueError(f"environment variable {RECORDS_READ}={value!r}: folder {path.parent} does not exist")
    return path


def _folder(name: str) -> None:
    value = os.environ.get(name, "").strip()
    if value and Path(value).expanduser().exists() and not Path(value).expanduser().is_dir():
        raise ValueError(f"environment variable {name}={value!r}: is a file, not a folder")


def check() -> None:
    """Read every variable of the module docstring and raise ``ValueError`` (one line,
    naming the variable) on the first bad value, or on a ``CLIRLIB_`` variable it does not know
    (``CLIRLIB_FORSE=1`` would otherwise read the cache it meant to skip); nothing is changed."""
    unknown = sorted(k for k in os.environ if k.startswith("CLIRLIB_") and k not in KNOWN)
    if unknown:
        raise ValueError(f"environment variable {unknown[0]} is not one clirlib reads (a misspelling?); "
                         f"its variables: {', '.join(KNOWN)}")
    _folder(HOME)
    _literal_folder(IR_DATASETS_HOME)
    _folder(IR_DATASETS_HOME)
    force()
    force_since()
    progress_disabled()
    threads()
    device_choice()
    system_workers()
    executor()
    records_read_log()
    if ray_address():
        check_address(ray_address(), f"environment variable {RAY_ADDRESS}")


@contextlib.contextmanager
def for_children(**values: str) -> Iterator[None]:
    """Set the variables the user has not set for the processes started inside the block;
    restore them after it."""
    added = {k: v for k, v in values.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def set_for_children(**values: str) -> None:
    """Set variables for this process and the processes it starts (the notebook kernels)."""
    os.environ.update(values)


def snapshot(names: tuple[str, ...] | None = None) -> dict[str, str]:
    """A copy of the environment (or of the variables ``names`` that are set), for a child process."""
    if names is None:
        return dict(os.environ)
    return {k: os.environ[k] for k in names if k in os.environ}
