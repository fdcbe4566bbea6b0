"""Shipped run records: the trained runs behind the committed tables, read like the cache.

``records/`` (committed) holds run records exactly as the cache of
:mod:`clirlib.runs.experiments` wrote them, one JSON line each, in gzip shards of at most
``SHARD_BYTES``, and ``records/MANIFEST.json``: for every record its key, shard, the
SHA-256 of its line, when it was trained, on which CPU and at which commit. The cache
reads a shipped record when ``results/runs/`` has none for the key (:func:`read`), and
checks it as it checks a local entry (schema, config, checksum, ``clirlib.cache``) plus
the manifest's SHA-256: a damaged record is refused, by key and shard, with a warning,
and the run is retrained. ``FORCE=1`` never reads them.

:func:`pack` refreshes ``records/`` from the local cache (``python -m clirlib records
pack``); shards are written with a fixed gzip timestamp, so the same records give the
same bytes. The records are outputs of this code; nothing edits them by hand.
A record that nothing reads any more (its configuration changed, so its key did) stays
until :func:`prune` drops it: run ``make reproduce`` with ``CLIRLIB_RECORDS_READ=FILE``
(every key the cache looks up is appended to FILE, :func:`note_lookup`, and a last line
when every notebook ran, :func:`note_complete`), then ``python -m clirlib records prune
FILE --apply``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import platform
import re
import subprocess
import warnings
from pathlib import Path
from typing import Any, Iterable

from .. import atomic, cache, env, paths
from ..cache import CACHE_VERSION
from ..data.synthetic import GENERATOR_VERSION

FORMAT = 1
MANIFEST = "MANIFEST.json"
#: Largest shard, compressed (the repository's limit for a committed file is 5 MB).
SHARD_BYTES = 4_500_000


class ShippedRecordWarning(UserWarning):
    """A shipped record failed a check; it is not used and the run is retrained."""


def line_digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


_manifests: dict[Path, dict[str, Any]] = {}
_shards: dict[Path, dict[str, str]] = {}


def manifest(folder: Path | None = None) -> dict[str, Any]:
    """The manifest of ``folder`` (default ``records/``); an empty one when there is none."""
    folder = paths.RECORDS_DIR if folder is None else folder
    if folder not in _manifests:
        path = folder / MANIFEST
        if not path.is_file():
            _manifests[folder] = {"format": FORMAT, "records": {}, "shards": {}}
        else:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("records"), dict):
                raise ValueError(f"{path}: not a shipped-records manifest of format {FORMAT}")
            _manifests[folder] = data
    return _manifests[folder]


def forget() -> None:
    """Drop what was read (after ``pack`` or a test that changes ``records/``)."""
    _manifests.clear()
    _shards.clear()


def _shard_lines(path: Path) -> dict[str, str]:
    """``{key: line}`` of one shard (read once per process)."""
    if path not in _shards:
        lines = {}
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if line:
                    lines[json.loads(line)["key"]] = line
        _shards[path] = lines
    return _shards[path]


def study_folder(study: str) -> Path:
    """``records/<study>``, the shipped records of a study benchmark (``paths.STUDY_RECORDS``);
    an unknown name raises."""
    if study not in paths.STUDY_RECORDS:
        raise ValueError(f"unknown study {study!r}; choose from {', '.join(paths.STUDY_RECORDS)}")
    return paths.RECORDS_DIR / study


def folders() -> list[Path]:
    """Where the cache looks for a shipped record, in order: ``records/``, then its study
    sub-folders (``paths.STUDY_RECORDS``)."""
    return [paths.RECORDS_DIR, *map(study_folder, paths.STUDY_RECORDS)]


#: The line a traced ``make reproduce`` appends once every notebook of the default profile ran:
#: :func:`prune` trusts no other log (a partial or failed run never looked up the rest).
COMPLETE = "# complete: reproduce --profile default"
#: A whole run key (``experiments.cache_key``): ``v<cache>-g<generator>-[<system>-]<16 hex>[-i<16 hex>]``,
#: so a lookup line cut short (a full disk) is refused, not read as a key that matches nothing.
_KEY = re.compile(r"v\d+-g\d+-(?:[a-z0-9_.]+-)?[0-9a-f]{16}(?:-i[0-9a-f]{16})?")


def _log_line(line: str) -> None:
    """Append one line to ``CLIRLIB_RECORDS_READ``'s file when it is set: one ``write`` on a
    file opened with O_APPEND, so lines of several processes never interleave."""
    log = env.records_read_log(paths.ROOT)
    if log is not None:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


def note_lookup(key: str) -> None:
    """Log ``key``, a run the cache looks up (``CLIRLIB_RECORDS_READ``; forced runs too)."""
    _log_line(key)


def note_complete() -> None:
    """Log that a ``make reproduce`` of the default profile ran every notebook (:data:`COMPLETE`)."""
    _log_line(COMPLETE)


def read_lookups(log: Path) -> set[str]:
    """The keys of a lookup log; a log without :data:`COMPLETE`, or with a line that is not
    a run key, raises naming the file (and line)."""
    keys, complete = set(), False
    try:
        with open(log, encoding="utf-8") as f:
            for i, line in enumerate(f, start=1):
                line = line.strip()
                if line == COMPLETE:
                    complete = True
                elif _KEY.fullmatch(line):
                    keys.add(line)
                else:
                    raise ValueError(f"{log}, line {i}: not a run key: {line!r}")
    except UnicodeDecodeError:
        raise ValueError(f"{log}: not a text file of run keys") from None
    if not complete:
        raise ValueError(f"{log}: no complete make reproduce recorded in it (a partial or failed run "
                         f"never looks up the rest); run make reproduce to the end with {env.RECORDS_READ}={log}")
    return keys


def prune(log: Path, apply: bool = False) -> dict[Path, list[str]]:
    """The records of ``records/`` and the study folders (:func:`folders`) whose key the
    lookup log ``log`` does not hold, per folder; ``apply``: drop them (the kept records keep
    their bytes and provenance) and their local cache entries (``results/runs``, which
    ``records pack`` would ship again). A folder none of whose records was looked up is left
    alone (its benchmark was not reproduced)."""
    looked_up = read_lookups(log)
    dropped: dict[Path, list[str]] = {}
    for folder in folders():
        records = load_all(folder)
        if not looked_up & records.keys():
            print(f"[records] {folder}: none of its {len(records)} records was looked up; left alone")
            continue
        dropped[folder] = sorted(records.keys() - looked_up)
        for key in dropped[folder]:
            print(f"[records] {folder}: {'drop' if apply else 'would drop'} {key} "
                  f"({record_kind(records[key])}, {records[key]['config'].get('dataset')}, "
                  f"trained {records[key].get('created')})")
        if dropped[folder] and apply:
            pack([r for k, r in records.items() if k in looked_up], folder, provenance())
            for key in dropped[folder]:
                (paths.RESULTS_DIR / "runs" / f"{key}.json").unlink(missing_ok=True)
    return dropped


def read(key: str, config: dict[str, Any], key_defaults: dict[str, Any], metric_names,
         trained: bool = True, folder: Path | None = None) -> dict[str, Any] | None:
    """The shipped record of ``key``, or ``None`` (not shipped, or damaged: then a warning).
    ``folder``: one folder, by default the first of :func:`folders` whose manifest has ``key``."""
    if folder is None:
        folder = next((f for f in folders() if key in manifest(f)["records"]), paths.RECORDS_DIR)
    entry = manifest(folder)["records"].get(key)
    if entry is None:
        return None
    shard = folder / entry["shard"]
    try:
        line = _shard_lines(shard).get(key)
        if line is None:
            raise cache.CacheEntryError("not in its shard")
        if line_digest(line) != entry["sha256"]:
            raise cache.CacheEntryError("its SHA-256 is not the manifest's")
        record = json.loads(line)
        cache.check_entry(record, key, config, key_defaults, metric_names, trained)
    except (OSError, EOFError, ValueError, cache.CacheEntryError) as e:
        problem = str(e).splitlines()[0] if str(e) else type(e).__name__
        warnings.warn(f"shipped record {key} in {shard} is damaged ({problem}); retraining it",
                      ShippedRecordWarning, stacklevel=3)
        return None
    return record


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def pack(records: Iterable[dict[str, Any]], folder: Path, provenance: dict[str, str]) -> dict[str, Any]:
    """Write ``records`` (cache entries with their checksum) into ``folder`` as shards and a
    manifest, replacing what was there; returns the manifest.

    Records are sorted by key and cut into shards of at most ``SHARD_BYTES`` compressed.
    ``provenance`` (``code``, ``cpu``) is what the manifest says of records that carry none
    of their own (``record["provenance"]``) and that the folder's manifest did not list with
    the same bytes: a record packed again keeps the commit and CPU it was shipped with. A
    record's own provenance also gives its entry a ``device`` (records trained since it is
    recorded)."""
    folder.mkdir(parents=True, exist_ok=True)
    known = manifest(folder)["records"]
    by_key = {}
    for rec in records:
        if rec.get("checksum") != cache.checksum(rec):
            raise ValueError(f"record {rec.get('key')!r}: checksum does not match; not packing a damaged record")
        by_key[rec["key"]] = rec
    lines = [(k, _canonical(by_key[k])) for k in sorted(by_key)]
    shards: list[list[tuple[str, str]]] = [[]]
    size = 0
    for k, line in lines:
        est = len(gzip.compress(line.encode(), mtime=0))  # a shard compresses to at most the sum
        if shards[-1] and size + est > SHARD_BYTES:
            shards.append([])
            size = 0
        shards[-1].append((k, line))
        size += est
    out: dict[str, Any] = {"format": FORMAT, "records": {}, "shards": {}}
    data_of = {f"shard-{i:03d}.jsonl.gz": gzip.compress("".join(line + "\n" for _, line in shard).encode(), mtime=0)
               for i, shard in enumerate(shards)}  # all compressed first: the files change in one short burst
    for (name, data), shard in zip(data_of.items(), shards):
        atomic.write_bytes(folder / name, data)
        out["shards"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "records": len(shard)}
        for k, line in shard:
            rec = by_key[k]
            before = known.get(k) or {}
            prov = rec.get("provenance") or (before if before.get("sha256") == line_digest(line) else provenance)
            out["records"][k] = {"shard": name, "sha256": line_digest(line), "created": rec.get("created"),
                                 "code": prov.get("code"), "cpu": prov.get("cpu"),
                                 **({"device": prov["device"]} if prov.get("device") else {}),
                                 "kind": record_kind(rec)}
    atomic.write_bytes(folder / MANIFEST, (json.dumps(out, indent=1, sort_keys=True) + "\n").encode())
    for old in folder.glob("shard-*.jsonl.gz"):  # shards the new manifest no longer names, once it is written
        if old.name not in data_of:
            old.unlink()
    forget()
    return out


def load_all(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """Every shipped record, checked against the manifest (a damaged one raises)."""
    folder = paths.RECORDS_DIR if folder is None else folder
    out = {}
    for key, entry in manifest(folder)["records"].items():
        line = _shard_lines(folder / entry["shard"]).get(key)
        if line is None or line_digest(line) != entry["sha256"]:
            raise ValueError(f"shipped record {key} in {folder / entry['shard']} is damaged")
        out[key] = json.loads(line)
    return out


def record_kind(record: dict[str, Any]) -> str:
    """What code path trained a record: ``system:<name>`` or ``<encoder>/<loss>``."""
    cfg = record["config"]
    if "system" in cfg:
        return f"system:{cfg['system']}"
    return f"{cfg.get('encoder')}/{cfg.get('loss')}"


_provenance: dict[str, str] = {}


def provenance() -> dict[str, str]:
    """What trains a record here: the commit of the checkout (``+modified`` when ``clirlib/``
    has uncommitted changes; ``unknown`` outside a git checkout) and the CPU model."""
    if not _provenance:
        code = "unknown"
        try:
            run = dict(cwd=paths.PACKAGE_DIR, capture_output=True, text=True, timeout=10)
            head = subprocess.run(["git", "rev-parse", "HEAD"], **run)
            if head.returncode == 0:
                dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "."], **run)
                code = head.stdout.strip() + ("+modified" if dirty.stdout.strip() else "")
        except (OSError, subprocess.SubprocessError):
            pass
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as f:
                names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
            cpu = names[0] if names else cpu
        except OSError:
            pass
        _provenance.update(code=code, cpu=cpu)
    return dict(_provenance)


def pack_local(profile: str = "default", folder: Path | None = None, code: str | None = None) -> dict[str, Any]:
    """Refresh ``records/`` from the local cache: every valid ``results/runs`` entry of the
    embedded benchmark ``profile`` (for ``default``, of the Debian benchmark
    ``paths.DEBIAN_DATASET`` too) under the current cache and generator versions, plus the
    shipped records of the same versions that the local cache does not hold. ``code``: the
    commit that trained the records that carry no provenance of their own (default: this
    checkout's). ``folder``: by default ``records/``, ``records/ci/`` for ``ci``
    (``paths.CI_RECORDS_DIR``: kept apart so that no other test reads them) and
    ``records/<name>/`` for a study benchmark (``paths.STUDY_RECORDS``: ``curves``)."""
    own_folder = profile == "ci" or profile in paths.STUDY_RECORDS
    if folder is None:
        folder = (paths.CI_RECORDS_DIR if profile == "ci" else study_folder(profile) if own_folder
                  else paths.RECORDS_DIR)
    prefix = f"v{CACHE_VERSION}-g{GENERATOR_VERSION}-"
    # records/ holds default's and the Debian benchmark's runs; records/ci and a study's folder their own only
    datasets = {profile} if own_folder else {profile, paths.DEBIAN_DATASET}
    records = {k: r for k, r in load_all(folder).items() if k.startswith(prefix)}
    kept_shipped = len(records)
    local = 0
    for path in sorted((paths.RESULTS_DIR / "runs").glob(f"{prefix}*.json")):
        with open(path, encoding="utf-8") as f:
            rec = json.load(f)
        if rec.get("config", {}).get("dataset") not in datasets or "error" in rec:
            continue
        if rec.get("checksum") != cache.checksum(rec):
            raise ValueError(f"{path}: checksum does not match its content; not packing it")
        records[rec["key"]] = rec
        local += 1
    out = pack(records.values(), folder, {**provenance(), **({"code": code} if code else {})})
    print(f"[records] {len(out['records'])} records ({local} from {paths.RESULTS_DIR / 'runs'}, "
          f"{kept_shipped} shipped before) in {len(out['shards'])} shards, "
          f"{sum(s['bytes'] for s in out['shards'].values()) / 1e6:.1f} MB, in {folder}")
    return out
