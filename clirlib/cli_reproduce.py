"""``python -m clirlib reproduce``: every notebook executed headless with papermill (``make
reproduce``), on the chosen executor; the README's claims table regenerated from
``tables/claims_summary.csv`` when the claims notebook ran.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

import pandas as pd

from . import atomic, env, paths, profiles
from .precheck import precheck
from .runs.raycluster import LOOPBACK_ENV, LocalCluster, probe, short_temp_dir
from .validate import ConfigError

#: The notebook that writes tables/claims_summary.csv, which the README's claims table mirrors.
CLAIMS_NOTEBOOK = "08_claims_summary.ipynb"
#: The notebook that writes tables/realtext_claims.csv (its real-text part, clirlib.studies.realtext).
FAMILIES_NOTEBOOK = "13_three_families.ipynb"
#: The notebook that writes Table 3's claims decided where the DSSM models learn
#: (``tables/curves_table3_verdicts.csv``): the claims table's last column.
CURVES_NOTEBOOK = "16_learning_curves.ipynb"


@contextlib.contextmanager
def _kernel_stderr_to(log: Path):
    """The notebook kernels inherit file descriptor 2: point it at ``log`` while they run, so
    their start-up warnings and, on Ctrl-C, the tracebacks of their sockets closing under
    them go there, not to the terminal; this process's own messages stay on the terminal."""
    sys.stderr.flush()
    try:
        on_fd2 = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a captured or replaced stream: leave it alone
        on_fd2 = False
    terminal = os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 2)
    ours = sys.stderr
    if on_fd2:
        sys.stderr = os.fdopen(os.dup(terminal), "w", buffering=1)
    try:
        yield
    finally:
        if on_fd2:
            sys.stderr.flush()
            sys.stderr.close()
            sys.stderr = ours
        os.dup2(terminal, 2)
        os.close(terminal)


#: The kernel managers of the notebooks running now (papermill's threads add them as kernels start).
_KERNELS: set = set()
#: Set once this reproduce is interrupted: a notebook that then fails is not reported as failed.
_INTERRUPTED = threading.Event()


@functools.cache
def _tracked_kernel_manager() -> type:
    """jupyter_client's kernel manager, remembered in :data:`_KERNELS` while its kernel runs.
    jupyter_client starts each kernel in its own session, out of reach of a Ctrl-C at the
    terminal, so an interrupted reproduce ends them itself (:func:`_end_kernels`)."""
    from jupyter_client.manager import AsyncKernelManager  # with papermill: only when notebooks run

    class TrackedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            await super().start_kernel(**kw)
            _KERNELS.add(self)

        async def shutdown_kernel(self, *args, **kw):
            _KERNELS.discard(self)
            await super().shutdown_kernel(*args, **kw)

    return TrackedKernelManager


def _end_kernels() -> None:
    """End the kernels this reproduce started, each with what it started (its process group,
    which it leads), by their PIDs: the runs in progress are lost, the stored ones stay."""
    for km in list(_KERNELS):
        process = getattr(km.provisioner, "process", None)
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM takes Ctrl-C's way out: kernels ended, the Ray cluster stopped


def _notebooks() -> list[Path]:
    return sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def settings_from_env(args: argparse.Namespace) -> None:
    """``--force`` and ``--executor`` where not typed: ``CLIRLIB_FORCE`` and ``CLIRLIB_EXECUTOR``
    (a typed flag wins), so that the notebooks' ``force`` parameter and the executor reproduce
    starts agree with what the kernels would read from the environment."""
    args.force = args.force or env.force()
    args.executor = args.executor or env.executor()


def reproduce(args: argparse.Namespace) -> int:
    settings_from_env(args)
    if args.data and not args.data.startswith(paths.IRDS_PREFIX) and args.data not in profiles.SIZES:
        # a folder: absolute, since the kernels run in notebooks/ (a relative path would name another
        # folder there); a profile's name is left as typed for precheck's own message
        args.data = str(Path(args.data).expanduser().resolve())
    # Every input checked before the first notebook starts (one line on failure, exit 2).
    notebooks = precheck(_notebooks(), dataset=args.data, kernel=args.kernel, only=args.notebooks)
    _check_address(args)
    import papermill as pm  # only here: starting Jupyter machinery is slow, and precheck reports a missing one

    if args.jobs is None:
        args.jobs = 1 if args.force else 2
    if args.jobs < 1:
        raise ValueError(f"--jobs: expected at least 1 notebook at a time, got {args.jobs}")
    if not args.data and args.jobs > 1:  # written once here, not by two kernels at the same time
        from .data.synthetic import generate_benchmark  # torch-heavy: only when notebooks run

        generate_benchmark(args.profile)
    env.quiet_children()  # the kernels inherit it: no bars in executed notebooks
    # A failed cell is reported below in one line; papermill's / nbclient's own error logs
    # (a kernel killed by Ctrl-C, for example) would add more.
    logging.getLogger("papermill").setLevel(logging.CRITICAL)
    params = {"profile": args.profile, "dataset": args.data or "", "force": bool(args.force)}
    out_dir = paths.RESULTS_DIR / "executed" / paths.run_tag(args.profile, args.data)
    out_dir.mkdir(parents=True, exist_ok=True)
    # The committed notebooks carry the default profile's outputs: a default run on the
    # embedded benchmark copies each executed notebook back over its source once it succeeds.
    in_place = paths.writes_committed(args.profile, args.data)
    marker = _force_marker(paths.RESULTS_DIR) if args.force else None
    eta = _Eta(notebooks) if args.force else None
    total = time.perf_counter()
    main = threading.current_thread() is threading.main_thread()
    on_term = signal.signal(signal.SIGTERM, _raise_interrupt) if main else None
    stop_ray = _executor_env(args)  # the kernels inherit CLIRLIB_EXECUTOR / RAY_ADDRESS too
    try:
        with _kernel_stderr_to(out_dir / "kernels.log"), _relay_ray_events():
            failed = _run_notebooks(pm, notebooks, args, params, out_dir, in_place, eta, total)
        if failed:
            return 1
    finally:
        stop_ray()
        if main:
            signal.signal(signal.SIGTERM, on_term)
    print(f"[reproduce] all notebooks done in {time.perf_counter() - total:.0f}s; executed copies in {out_dir}"
          f"{'; notebooks/ updated' if in_place else ''}")
    if marker is not None:
        marker.unlink(missing_ok=True)  # the forced retrain is complete: nothing to resume
    if in_place and len(notebooks) == len(_notebooks()):
        from .runs import shipped  # torch-heavy: only when notebooks ran

        shipped.note_complete()  # under CLIRLIB_RECORDS_READ: the log records prune may trust
    # The README's claims table mirrors tables/claims_summary.csv, which CLAIMS_NOTEBOOK writes, and
    # its real-text column FAMILIES_NOTEBOOK's realtext_paper_claims.csv: a run of neither
    # (--notebooks 01 04) leaves it as it is.
    ran = {nb.name for nb in notebooks}
    if in_place and ran & {CLAIMS_NOTEBOOK, FAMILIES_NOTEBOOK, CURVES_NOTEBOOK}:
        real = paths.TABLES_DIR / "realtext_paper_claims.csv"  # notebook 13's: the same claims on real text
        dssm = paths.TABLES_DIR / "curves_table3_verdicts.csv"  # notebook 16's: Table 3 where DSSM learns
        changed = update_readme(paths.ROOT / "README.md", pd.read_csv(paths.TABLES_DIR / "claims_summary.csv"),
                                real_text=pd.read_csv(real) if real.is_file() else None,
                                where_dssm_learns=pd.read_csv(dssm) if dssm.is_file() else None, paper=True)
        print(f"[reproduce] README claims table {'regenerated' if changed else 'unchanged'}")
    if in_place and FAMILIES_NOTEBOOK in ran:
        from .studies.verdict_words import REALTEXT_MARKERS  # torch-heavy (stats): only when it runs

        changed = update_readme(paths.ROOT / "README.md", pd.read_csv(paths.TABLES_DIR / "realtext_claims.csv"),
                                REALTEXT_MARKERS)
        print(f"[reproduce] README real-text claims table {'regenerated' if changed else 'unchanged'}")
    return 0


def _say(line: str, stream=None) -> None:
    """``line`` and its newline in one write: notebooks run on two threads, and ``print``
    writes the text and the newline apart, so two lines could run together."""
    stream = sys.stdout if stream is None else stream
    stream.write(line + "\n")
    stream.flush()


def _run_notebook(pm, nb: Path, args: argparse.Namespace, params: dict, out_dir: Path, in_place: bool) -> bool:
    """Execute one notebook with papermill; on failure say so in one line and return False
    (silently once this reproduce is interrupted: its kernel was ended on purpose)."""
    from . import notebook  # imports torch and the studies: only when notebooks run

    _say(f"[reproduce] {nb.name} (profile={args.profile}{', data=' + args.data if args.data else ''}) ...")
    try:
        pm.execute_notebook(str(nb), str(out_dir / nb.name), parameters=params, kernel_name=args.kernel,
                            cwd=str(nb.parent), progress_bar=False, log_output=False,
                            kernel_manager_class=_tracked_kernel_manager())
    except Exception as e:
        if _INTERRUPTED.is_set():
            return False
        if isinstance(e, pm.PapermillExecutionError):  # one line: the cell's error and where to read the rest
            what = (str(e.evalue).strip().splitlines() or [""])[0]
            _say(f"[reproduce] {nb.name} failed: {e.ename}: {what} (cell {e.exec_count}; executed copy with "
                 f"the traceback: {out_dir / nb.name})", sys.stderr)
            return False
        if isinstance(e, (pm.PapermillException, RuntimeError)):  # a dead kernel, a missing parameter, ...
            what = (str(e).strip().splitlines() or [""])[0]
            _say(f"[reproduce] {nb.name} failed: {type(e).__name__}: {what} (executed copy so far: "
                 f"{out_dir / nb.name}; the kernel's own messages: {out_dir / 'kernels.log'})", sys.stderr)
            return False
        raise
    if in_place:
        atomic.write_bytes(nb, (out_dir / nb.name).read_bytes())  # a kill leaves the old notebook, never a cut one
        notebook.committed_form(nb)
    return True


def _run_notebooks(pm, notebooks: list[Path], args: argparse.Namespace, params: dict, out_dir: Path,
                   in_place: bool, eta, total: float) -> bool:
    """Run ``notebooks``, ``args.jobs`` at a time (each reads and writes only its own tables
    and figures, so the order does not change a byte); after a failure no new one starts.
    Returns True when one failed."""
    todo, running = list(notebooks), {}
    _INTERRUPTED.clear()
    # Two kernels' torch threads outnumber the cores: passive OpenMP waits (docs/timings.md, session 28)
    passive = env.for_children(OMP_WAIT_POLICY="PASSIVE") if args.jobs > 1 else contextlib.nullcontext()
    with passive, ThreadPoolExecutor(max_workers=args.jobs) as pool:
        try:
            failed = False
            while todo or running:
                while todo and not failed and len(running) < args.jobs:
                    nb = todo.pop(0)
                    fut = pool.submit(_run_notebook, pm, nb, args, params, out_dir, in_place)
                    running[fut] = (nb, time.perf_counter())
                if not running:
                    break
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    nb, t0 = running.pop(fut)
                    if not fut.result():
                        failed = True
                        continue
                    _say(f"[reproduce] {nb.name} done in {time.perf_counter() - t0:.0f}s"
                         f"{eta.after(nb, time.perf_counter() - total) if eta else ''}")
        except BaseException:  # Ctrl-C, SIGTERM or an error: the kernels would run their notebooks to the end
            _INTERRUPTED.set()
            _end_kernels()
            raise
    return failed


def _force_marker(results: Path) -> Path:
    """``results/force-since``: when the forced retrain began. Kept until every notebook has
    run, so an interrupted ``reproduce --force`` started again keeps the runs it already
    retrained (``CLIRLIB_FORCE_SINCE``, read by ``experiments``) and trains only the rest."""
    results.mkdir(parents=True, exist_ok=True)
    marker = results / "force-since"
    try:
        since = env.unix_time(marker.read_text().strip())
        print(f"[reproduce] resuming the forced retrain begun at {time.ctime(since)} "
              f"(runs retrained since then are kept; delete {marker} to start over)", flush=True)
    except (OSError, ValueError) as e:
        if isinstance(e, ValueError):  # a damaged marker: nothing to resume from, so start over, and say so
            print(f"[reproduce] {marker} holds no start time ({e}): the forced retrain starts over", flush=True)
        since = time.time()
        atomic.write_text(marker, f"{since}\n")
    env.set_for_children(**{env.FORCE_SINCE: repr(since)})
    return marker


class _Eta:
    """Time left in a forced retrain, from the per-notebook times of the last measured one
    (``bench/reproduce_timing.json``, when present) scaled by this run's pace so far."""

    def __init__(self, notebooks: list[Path]):
        try:
            with open(paths.ROOT / "bench" / "reproduce_timing.json", encoding="utf-8") as f:
                measured = json.load(f)["notebooks"]
        except (OSError, ValueError, KeyError):
            measured = {}
        self.expected = {nb.name: float(measured.get(nb.name, 0.0)) for nb in notebooks}
        self.done = 0.0

    def after(self, nb: Path, elapsed: float) -> str:
        self.done += self.expected.pop(nb.name, 0.0)
        left = sum(self.expected.values())
        if not self.done or not left:
            return ""
        return f"; about {left * elapsed / self.done / 60:.0f} min left"


def _check_address(args: argparse.Namespace) -> None:
    """``--address`` (or ``RAY_ADDRESS``) with ``--executor ray``: a head must answer there
    within seconds (``raycluster.probe``); ``--address`` without ``--executor ray`` is refused."""
    if args.address and args.executor != "ray":
        raise ConfigError("--address", f"applies to --executor ray only, not {args.executor}")
    if args.executor == "ray" and (args.address or env.ray_address()):
        probe(args.address or env.ray_address(), option="--address" if args.address else "RAY_ADDRESS")


@contextlib.contextmanager
def _relay_ray_events():
    """While the notebooks run, print the lines the kernels' grids append to the Ray events
    log (``executors.events_log``: node deaths, retries) on this terminal: the kernels'
    own stderr goes to kernels.log."""
    from .runs.executors import events_log  # torch-heavy (executors -> experiments -> train)

    log = events_log()
    start = log.stat().st_size if log.exists() else 0
    stop = threading.Event()

    def relay() -> None:
        nonlocal start
        while True:
            done = stop.wait(1.0)
            try:
                if log.exists() and log.stat().st_size > start:
                    with open(log, encoding="utf-8", errors="replace") as f:
                        f.seek(start)
                        text = f.read()
                    start += len(text.encode("utf-8", errors="replace"))
                    for line in text.splitlines():
                        print(f"[reproduce] {line.split(' ', 2)[-1]}", flush=True)
            except OSError:
                pass
            if done:
                return

    t = threading.Thread(target=relay, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(5)


def _executor_env(args: argparse.Namespace):
    """Name the executor for the notebook kernels (``clirlib.runs.executors.get_executor`` reads
    it). ``ray`` without an address: one local loopback Ray instance for every notebook,
    started here; returns the function that stops it."""
    env.set_for_children(**{env.EXECUTOR: args.executor})
    if args.address:
        env.set_for_children(**{env.RAY_ADDRESS: args.address})
    if args.executor != "ray" or env.ray_address():
        return lambda: None
    from .determinism import DEFAULT_THREADS  # torch-heavy, as above

    env.set_for_children(**LOOPBACK_ENV)
    tmp = short_temp_dir()
    cluster = LocalCluster(Path(tmp.name), [max(DEFAULT_THREADS, os.cpu_count() or 1)]).__enter__()
    env.set_for_children(**{env.RAY_ADDRESS: cluster.address})
    print(f"[reproduce] started a local Ray head at {cluster.address} (loopback only)", flush=True)

    def stop() -> None:
        cluster.stop()
        tmp.cleanup()

    return stop


def update_readme(readme, summary: pd.DataFrame, markers: tuple[str, str] | None = None,
                  real_text: pd.DataFrame | None = None, where_dssm_learns: pd.DataFrame | None = None,
                  paper: bool = False) -> bool:
    """Replace the README's block between ``markers`` (default: ``README_START`` and
    ``README_END``, the paper's claims) by :func:`clirlib.studies.verdict_words.markdown_table`
    of ``summary`` (with ``real_text``'s and ``where_dssm_learns``' verdicts as columns, and with
    ``paper`` the paper's own tables read against the claims); returns whether the file changed."""
    from .studies.verdict_words import README_END, README_START, markdown_table  # torch-heavy (stats): only when it runs

    start, end = markers or (README_START, README_END)
    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    if start not in text or end not in text:
        raise ValueError(f"{path}: no {start} ... {end} block to regenerate")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{start}\n{markdown_table(summary, real_text, where_dssm_learns, paper)}\n{end}{tail}"
    if new != text:
        atomic.write_text(path, new)
    return new != text
