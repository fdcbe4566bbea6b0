"""Shipped run records: the trained runs behind the committed tables, read like the cache.

``records/`` (committed) holds run records exactly as the cache of
:mod:`clirlib.runs.experiments` wrote them, one JSON line each, in gzip shards of at most
``SHARD_BYTES`` named by their content (``shard-<SHA-256 prefix>.jsonl.gz``), and
``records/MANIFEST.json``: for every record its key, shard, the SHA-256 of its line, when it
was trained, on which CPU and at which commit. The cache reads a shipped record when
``results/runs/`` has none for the key (:func:`read`): the line of its shard whose SHA-256 is
the manifest's, checked as a local entry is (schema, config, checksum, ``clirlib.cache``). A
damaged record is refused, by key and shard, with a warning, and the run is retrained; the
shard's other records are still read. ``FORCE=1`` never reads them. :func:`load_all` (pack,
prune, verify) checks everything and raises naming the file and line.

:func:`pack` refreshes ``records/`` from the local cache (``python -m clirlib records
pack``); shards are written with a fixed gzip timestamp, so the same records give the
same bytes. New shards are written first, the manifest next, and only then are the shards
it no longer names removed: a pack stopped at any point leaves the old manifest with its
shards (and at most unnamed new shards, which the next pack removes). The records are
outputs of this code; nothing edits them by hand.
A record that nothing reads any more (its configuration changed, so its key did) stays
until :func:`prune` drops it: run ``make reproduce`` with ``CLIRLIB_RECORDS_READ=FILE``
(every key the cache looks up is appended to FILE, :func:`note_lookup`, and a last line
when every notebook ran, :func:`note_complete`), then ``python -m clirlib records prune
FILE --apply``.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import platform
import re
import subprocess
import threading
import warnings
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

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
_shards: dict[Path, "Shard"] = {}


class _RepeatedKey(ValueError):
    """A JSON object names one key twice (``json.load`` would keep the last, silently)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook``: the object as a dict, a key given twice a :class:`_RepeatedKey`."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"\s*:?|[{}\[\]]')


def _repeated_key_lines(text: str, key: str) -> str:
    """", line N (first on line M)": where ``key`` is written a second time as a key of one
    JSON object of ``text``, and where that object first had it; "" when no object repeats it.
    Keys are told from string values by the ':' after them, objects by their braces."""
    objects: list[dict[str, int] | None] = []  # per open bracket: the object's keys and offsets, None for an array
    for m in _JSON_TOKEN.finditer(text):
        tok = m.group()
        if tok in ("{", "["):
            objects.append({} if tok == "{" else None)
        elif tok in ("}", "]"):
            if objects:
                objects.pop()
        elif tok.endswith(":") and objects and objects[-1] is not None:
            name = json.loads(tok[:-1].rstrip())
            seen = objects[-1]
            if name == key and name in seen:
                first, second = (text.count("\n", 0, i) + 1 for i in (seen[name], m.start()))
                return f", line {second} (first on line {first})"
            seen.setdefault(name, m.start())
    return ""


def manifest(folder: Path | None = None) -> dict[str, Any]:
    """The manifest of ``folder`` (default ``records/``); an empty one when there is none."""
    folder = paths.RECORDS_DIR if folder is None else folder
    if folder not in _manifests:
        path = folder / MANIFEST
        if not path.is_file():
            _manifests[folder] = {"format": FORMAT, "records": {}, "shards": {}}
        else:
            restore = f"(git checkout {path} restores the committed one)"
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
                data = json.loads(text, object_pairs_hook=_unique_pairs)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}, line {e.lineno}: not valid JSON ({e.msg}) {restore}") from None
            except UnicodeDecodeError:
                raise ValueError(f"{path}: not a UTF-8 text file {restore}") from None
            except _RepeatedKey as e:  # a record listed twice: which entry holds would be json's choice
                raise ValueError(f"{path}{_repeated_key_lines(text, e.key)}: key {e.key!r} given twice in one "
                                 f"table (JSON readers keep only the last) {restore}") from None
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("records"), dict):
                raise ValueError(f"{path}: not a shipped-records manifest of format {FORMAT} {restore}")
            if not isinstance(data.get("shards", {}), dict):
                raise ValueError(f"{path}: its 'shards' is not a table of shard files {restore}")
            for key, entry in data["records"].items():
                if not isinstance(entry, dict) or not {"shard", "sha256"} <= entry.keys():
                    raise ValueError(f"{path}: the entry of record {key} lacks its shard or SHA-256 {restore}")
                shard, sha = entry["shard"], entry["sha256"]
                if (not isinstance(shard, str) or shard in ("", ".", "..") or Path(shard).name != shard
                        or not isinstance(sha, str)):
                    raise ValueError(f"{path}: the entry of record {key} has shard {shard!r} and SHA-256 {sha!r}, "
                                     f"not a shard file name and a text {restore}")
            for name, entry in data.get("shards", {}).items():
                if not isinstance(entry, dict) or not isinstance(entry.get("sha256", ""), str):
                    raise ValueError(f"{path}: the entry of shard {name} is not a table with a SHA-256 text {restore}")
            _manifests[folder] = data
    return _manifests[folder]


_held = threading.local()  # the folders this thread holds the lock of (``_held.folders``)


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder itself while a pack or a prune reads and rewrites it
    (its manifest and shards): two at once each removed the shards the other's manifest named.
    Re-entrant in one thread (prune packs under its own lock); the manifests read are dropped.
    Where the file system refuses a folder's lock (NFS) it runs unlocked (``atomic.lock_folder``)."""
    folder = Path(folder).resolve()
    held = _held.__dict__.setdefault("folders", set())
    if folder in held:
        yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    with atomic.lock_folder(folder):
        held.add(folder)
        try:
            forget()  # what this process read before the lock may be another packer's old manifest
            yield
        finally:
            held.discard(folder)


def forget() -> None:
    """Drop what was read (after ``pack`` or a test that changes ``records/``)."""
    _manifests.clear()
    _shards.clear()


class Shard(NamedTuple):
    """One shard file as read: ``lines`` ``{SHA-256 of a line: (line number, line)}``, the
    ``problems`` met, each naming its line, and the file's ``sha256`` (None when unreadable)."""

    lines: dict[str, tuple[int, str]]
    problems: list[str]
    sha256: str | None


def _shard(path: Path) -> Shard:
    """One shard, read once per process (:class:`Shard`); problems are a line that is not
    UTF-8, a stream cut short, a file that is not gzip or is missing. A record is found by its
    line's SHA-256 (the manifest's), so a damaged line costs that record alone."""
    if path not in _shards:
        lines: dict[str, tuple[int, str]] = {}
        problems: list[str] = []
        digest = None
        i = 0
        data = None
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            problems.append("the file is missing")
        except OSError as e:
            problems.append(f"cannot be read ({atomic.describe(e)})")
        if data is not None:
            digest = hashlib.sha256(data).hexdigest()
            try:
                with gzip.GzipFile(fileobj=io.BytesIO(data)) as f:
                    for i, raw in enumerate(f, start=1):
                        try:
                            line = raw.decode("utf-8").rstrip("\n")
                        except UnicodeDecodeError:
                            problems.append(f"line {i}: not UTF-8")
                            continue
                        if line:
                            key = line_digest(line)
                            if key in lines:
                                problems.append(f"line {i}: the same record as line {lines[key][0]}")
                            lines.setdefault(key, (i, line))
            except EOFError:
                problems.append(f"cut short after line {i}")
            except (OSError, zlib.error) as e:
                problems.append(f"after line {i}: not a readable gzip stream ({e})")
        _shards[path] = Shard(lines, problems, digest)
    return _shards[path]


def _record_at(shard: Path, key: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The record ``key`` of ``shard``: its line whose SHA-256 is the manifest ``entry``'s.
    Raises ``cache.CacheEntryError`` (a ``ValueError``) saying what is wrong."""
    lines, problems, _ = _shard(shard)
    hit = lines.get(entry["sha256"])
    if hit is None:
        raise cache.CacheEntryError("no line of its shard has its SHA-256 in the manifest"
                                    + (f"; {'; '.join(problems[:2])}" if problems else ""))
    record = _parse(shard, *hit)
    if record["key"] != key:
        raise cache.CacheEntryError(f"line {hit[0]} holds record {record['key']}")
    return record


def _parse(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}, line {number}: not valid JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(record, dict) or not isinstance(record.get("key"), str):
        raise ValueError(f"{path}, line {number}: not a run record (no key)")
    return record


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
    ``records pack`` would ship again). The records of a data set (a folder's records with one
    ``config["dataset"]``) none of which was looked up are left alone: that benchmark was not
    reproduced, or its files here differ from those the records were trained on (real data:
    other input digests, other keys)."""
    looked_up = read_lookups(log)
    dropped: dict[Path, list[str]] = {}
    for folder in folders():
        with _locked(folder):
            _prune_folder(folder, looked_up, apply, dropped)
    return dropped


def _prune_folder(folder: Path, looked_up: set[str], apply: bool, dropped: dict[Path, list[str]]) -> None:
    """:func:`prune` for one folder (under its lock)."""
    records = load_all(folder)
    by_data: dict[str, set[str]] = {}
    for key, rec in records.items():
        by_data.setdefault(str(rec["config"].get("dataset")), set()).add(key)
    candidates = set()
    for data, keys in sorted(by_data.items()):
        if looked_up & keys:
            candidates |= keys
        else:
            print(f"[records] {folder}: none of its {len(keys)} records of {data} was looked up; left alone")
    if not candidates:  # nothing of this folder was looked up
        return
    dropped[folder] = sorted(candidates - looked_up)
    for key in dropped[folder]:
        print(f"[records] {folder}: {'drop' if apply else 'would drop'} {key} "
              f"({record_kind(records[key])}, {records[key]['config'].get('dataset')}, "
              f"trained {records[key].get('created')})")
    if apply and dropped[folder]:
        pack([r for k, r in records.items() if k not in dropped[folder]], folder, provenance())
        for key in dropped[folder]:
            (paths.RESULTS_DIR / "runs" / f"{key}.json").unlink(missing_ok=True)


def read(key: str, config: dict[str, Any], key_defaults: dict[str, Any], metric_names,
         trained: bool = True, folder: Path | None = None) -> dict[str, Any] | None:
    """The shipped record of ``key``, or ``None`` (not shipped, or damaged: then a warning).
    ``folder``: one folder, by default the first of :func:`folders` whose manifest has ``key``."""
    given = folder
    for fresh in (False, True):
        folder = given if given is not None else next((f for f in folders() if key in manifest(f)["records"]),
                                                      paths.RECORDS_DIR)
        entry = manifest(folder)["records"].get(key)
        if entry is None:
            return None
        shard = folder / entry["shard"]
        if fresh or os.path.lexists(shard):
            break
        forget()  # a pack replaced the manifest this process read, and its shards: read the new one
    try:
        record = _record_at(shard, key, entry)
        cache.check_entry(record, key, config, key_defaults, metric_names, trained)
    except (OSError, EOFError, ValueError, cache.CacheEntryError) as e:
        problem = str(e).splitlines()[0] if str(e) else type(e).__name__
        warnings.warn(f"shipped record {key} in {shard} is damaged ({problem}); retraining it",
                      ShippedRecordWarning, stacklevel=3)
        return None
    return record


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def shard_name(text: bytes) -> str:
    """A shard's file name, from its uncompressed lines (so another zlib build, which may
    compress the same lines to other bytes, keeps the name): a pack never overwrites a shard
    that the manifest in place still names."""
    return f"shard-{hashlib.sha256(text).hexdigest()[:16]}.jsonl.gz"


def shipped_before(folder: Path) -> dict[str, dict[str, Any]]:
    """``{SHA-256 of a record's line: its entry}`` in the first committed manifest of ``folder``
    that listed those bytes (git history of ``folder/MANIFEST.json``, oldest first; empty
    outside a git checkout and in a shallow clone, whose oldest commit is not the first): what
    the record was trained on, as said when it was first shipped."""
    out: dict[str, dict[str, Any]] = {}
    try:
        rel = (folder / MANIFEST).resolve().relative_to(paths.ROOT.resolve())
    except ValueError:
        return out
    run = dict(cwd=paths.ROOT, capture_output=True, timeout=60)
    try:
        shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], text=True, **run)
        if shallow.returncode != 0 or shallow.stdout.strip() != "false":  # no history, or only its end
            return out
        log = subprocess.run(["git", "log", "--reverse", "--format=%H", "--", str(rel)], text=True, **run)
        for commit in log.stdout.split() if log.returncode == 0 else []:
            shown = subprocess.run(["git", "show", f"{commit}:./{rel}"], **run)  # ./: relative to ROOT
            if shown.returncode != 0:
                continue
            try:
                entries = json.loads(shown.stdout).get("records", {})
            except (ValueError, AttributeError):
                continue
            for entry in entries.values():
                if isinstance(entry, dict) and "sha256" in entry:
                    out.setdefault(entry["sha256"], entry)
    except (OSError, subprocess.SubprocessError):
        pass
    return out


def pack(records: Iterable[dict[str, Any]], folder: Path, provenance: dict[str, str],
         history: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Write ``records`` (cache entries with their checksum) into ``folder`` as shards and a
    manifest, replacing what was there; returns the manifest.

    Records are sorted by key and cut into shards of at most ``SHARD_BYTES`` compressed.
    What the manifest says a record was trained on (``code``, ``cpu``; ``created`` is always
    the record's own) is, in order: the record's own ``record["provenance"]`` (records trained since it is recorded;
    it also gives a ``device``); the entry of the first manifest that shipped the same bytes
    (``history``, :func:`shipped_before`) or the folder's manifest's when it lists the same
    bytes; else ``provenance`` (the packer's)."""
    with _locked(folder):
        return _pack(records, folder, provenance, history)


def _pack(records: Iterable[dict[str, Any]], folder: Path, provenance: dict[str, str],
          history: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    known = manifest(folder)["records"]
    history = history or {}
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
    texts = ["".join(line + "\n" for _, line in shard).encode() for shard in shards]
    data_of = {shard_name(text): gzip.compress(text, mtime=0) for text in texts}
    for (name, data), shard in zip(data_of.items(), shards):
        atomic.write_bytes(folder / name, data)  # a new name: the manifest in place names none of these
        out["shards"][name] = {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data), "records": len(shard)}
        for k, line in shard:
            rec = by_key[k]
            digest = line_digest(line)
            before = known.get(k) or {}
            prov = (rec.get("provenance") or history.get(digest)
                    or (before if before.get("sha256") == digest else provenance))
            out["records"][k] = {"shard": name, "sha256": digest, "created": rec.get("created"),
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
    """Every shipped record of ``folder``, everything checked: each line of each shard the
    manifest names is a record the manifest lists there, once, with that line's SHA-256, and
    the shard has the manifest's SHA-256. The first problem raises, naming the file (and line)."""
    folder = paths.RECORDS_DIR if folder is None else folder
    man = manifest(folder)
    listed: dict[str, list[str]] = {}
    for key, entry in man["records"].items():
        listed.setdefault(entry["shard"], []).append(key)
    out: dict[str, dict[str, Any]] = {}
    for name in sorted(set(man.get("shards", {})) | set(listed)):
        path = folder / name
        lines, problems, file_digest = _shard(path)
        if problems:
            raise ValueError(f"{path}: {problems[0]}")
        for digest, (number, line) in sorted(lines.items(), key=lambda x: x[1][0]):
            record = _parse(path, number, line)
            key = record["key"]
            entry = man["records"].get(key)
            if entry is None:
                raise ValueError(f"{path}, line {number}: record {key} is not in {folder / MANIFEST}")
            if key in out:
                raise ValueError(f"{path}, line {number}: record {key} a second time")
            if entry["shard"] != name or entry["sha256"] != digest:
                raise ValueError(f"{path}, line {number}: record {key} is not what {folder / MANIFEST} lists "
                                 f"({'another shard' if entry['shard'] != name else 'another SHA-256'})")
            out[key] = record
        for key in listed.get(name, []):
            if key not in out:
                raise ValueError(f"{path}: record {key}, listed there by {folder / MANIFEST}, is not in it")
        want = man.get("shards", {}).get(name, {}).get("sha256")  # every line right, the file other bytes
        if want is None:
            raise ValueError(f"{path}: {folder / MANIFEST} gives this shard no SHA-256")
        if file_digest != want:
            raise ValueError(f"{path}: its SHA-256 is not the one {folder / MANIFEST} gives it (its records are "
                             f"intact: recompressed? git checkout {path} restores the committed file)")
    return out


def readable(folder: Path | None = None) -> dict[str, dict[str, Any]]:
    """The shipped records of ``folder`` that can be read, as the cache reads them (each by its
    line's SHA-256): a damaged one is left out with a warning naming it and its shard, the
    others are kept (for readers during ``make reproduce``; pack, prune and verify use the
    strict :func:`load_all`)."""
    folder = paths.RECORDS_DIR if folder is None else folder
    out = {}
    for key, entry in manifest(folder)["records"].items():
        shard = folder / entry["shard"]
        try:
            record = _record_at(shard, key, entry)
        except ValueError as e:
            warnings.warn(f"shipped record {key} in {shard} is damaged ({e}); left out", ShippedRecordWarning,
                          stacklevel=2)
            continue
        out[key] = record
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
    has uncommitted changes; ``unknown`` outside a git checkout) and the CPU (:func:`cpu_from_cpuinfo`)."""
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
        _provenance.update(code=code, cpu=cpu_name())
    return dict(_provenance)


def cpu_name() -> str:
    """This machine's CPU as records name it: :func:`cpu_from_cpuinfo` of ``/proc/cpuinfo``, else
    what ``platform`` says (no such file, or no model name in it)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = cpu_from_cpuinfo(f.read())
    except OSError:
        cpu = None
    return cpu or platform.processor() or platform.machine()


def cpu_from_cpuinfo(text: str) -> str | None:
    """The first CPU of a ``/proc/cpuinfo`` text: its model name, followed by its family and model
    numbers where the text gives them (``AMD EPYC (family 25, model 17)``); None without a model
    name. The numbers are there because two generations of one vendor can report the same name
    (a virtual machine's "AMD EPYC") and round differently (records/README.md)."""
    first: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if first:
                break  # the first processor's block ends
            continue
        key, sep, value = line.partition(":")
        if sep:
            first.setdefault(key.strip(), value.strip())
    name = first.get("model name")
    if not name:
        return None
    family, model = first.get("cpu family"), first.get("model")
    return f"{name} (family {family}, model {model})" if family and model else name


def bare_cpu(cpu: str) -> str:
    """A provenance CPU without its family and model: the name older records hold."""
    return cpu.split(" (family ", 1)[0]


def same_cpu(a: str, b: str) -> bool:
    """Whether two provenance CPUs are one: equal strings, or equal names where one of them was
    recorded before the family and model were (:func:`cpu_from_cpuinfo`), as the older records' were."""
    return a == b or (bare_cpu(a) == bare_cpu(b) and (a == bare_cpu(a) or b == bare_cpu(b)))


def pack_local(profile: str = "default", folder: Path | None = None, code: str | None = None) -> dict[str, Any]:
    """Refresh ``records/`` from the local cache: every valid ``results/runs`` entry of the
    embedded benchmark ``profile`` (for ``default``, of the Debian benchmark
    ``paths.DEBIAN_DATASET`` too) under the current cache and generator versions, plus the
    shipped records of the same versions that the local cache does not hold. ``code``: the
    commit that trained the records that carry no provenance of their own (default: this
    checkout's). ``folder``: by default ``records/``, ``records/ci/`` for ``ci``
    (``paths.CI_RECORDS_DIR``: kept apart so that no other test reads them) and
    ``records/<name>/`` for a study benchmark (``paths.STUDY_RECORDS``: ``curves``)."""
    if code is not None and not re.fullmatch(r"[0-9a-f]{7,40}(\+modified)?", code):  # "" meant this checkout's
        raise ValueError(f"--code: expected a commit (7 to 40 hexadecimal digits, then +modified as provenance "
                         f"writes a checkout with changes), got {code!r}")
    own_folder = profile == "ci" or profile in paths.STUDY_RECORDS
    if folder is None:
        folder = (paths.CI_RECORDS_DIR if profile == "ci" else study_folder(profile) if own_folder
                  else paths.RECORDS_DIR)
    prefix = f"v{CACHE_VERSION}-g{GENERATOR_VERSION}-"
    # records/ holds default's and the Debian benchmark's runs; records/ci and a study's folder their own only
    datasets = {profile} if own_folder else {profile, paths.DEBIAN_DATASET}
    with _locked(folder):  # what it reads is what it rewrites: no prune or pack in between
        return _pack_local(folder, prefix, datasets, code)


def _pack_local(folder: Path, prefix: str, datasets: set[str], code: str | None) -> dict[str, Any]:
    records = {k: r for k, r in load_all(folder).items() if k.startswith(prefix)}
    kept_shipped = len(records)
    local = 0
    for path in sorted((paths.RESULTS_DIR / "runs").glob(f"{prefix}*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ValueError(f"{path}: not a readable cache entry ({e}); not packing it") from e
        if not isinstance(rec, dict) or not isinstance(rec.get("config", {}), dict):
            raise ValueError(f"{path}: not a cache entry (a JSON object with a config object); not packing it")
        if rec.get("config", {}).get("dataset") not in datasets or "error" in rec:
            continue
        if rec.get("checksum") != cache.checksum(rec):
            raise ValueError(f"{path}: checksum does not match its content; not packing it")
        records[rec["key"]] = rec
        local += 1
    out = pack(records.values(), folder, {**provenance(), **({"code": code} if code else {})},
               history=shipped_before(folder))
    print(f"[records] {len(out['records'])} records ({local} from {paths.RESULTS_DIR / 'runs'}, "
          f"{kept_shipped} shipped before) in {len(out['shards'])} shards, "
          f"{sum(s['bytes'] for s in out['shards'].values()) / 1e6:.1f} MB, in {folder}")
    return out
