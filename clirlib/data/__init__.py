"""Data: the embedded WikiCLIR-like benchmark and the real WikiCLIR / Polyglot readers (Section 5).

- ``load_dataset``: the one entry point (profile name or WikiCLIR folder -> RankingDataset)
- ``SOURCES`` / ``source_of``: the data sources registered by name, a reader per format (``sources``)
- ``load_wikiclir``: the streaming WikiCLIR reader, ``load_polyglot``: Polyglot pickles
- ``irds`` / ``clirmatrix``: WikiCLIR and CLIRMatrix from ir_datasets' local cache (``irds:...``);
  ``load_clirmatrix``: the CLIRMatrix reader on files the user names
- ``generate_benchmark``: the embedded benchmark (``synthetic``; its sizes ``PROFILES`` are ``clirlib.profiles.SIZES``)
- ``tokenize`` / ``build_vocab``: text handling, ``table1``: Table 1 for loaded data
"""

from .dataset import SPLITS, RankingDataset, Ragged, Split, Vocab
from .errors import DataFormatError, DataSkipWarning, MissingDataError
from .languages import WIKICLIR_LANGUAGES, available_languages, language_code
from .load import clear_cache, load_dataset, load_for
from .polyglot import load_polyglot, read_polyglot, save_polyglot
from ..profiles import SIZES as PROFILES  # the benchmark sizes, defined in clirlib.profiles
from .describe import table1
from .synthetic import generate_benchmark
from .text import build_vocab, tokenize
from .wikiclir import load_wikiclir
from .clirmatrix import load_clirmatrix
from .sources import SOURCES, source_of

__all__ = [
    "SPLITS", "RankingDataset", "Ragged", "Split", "Vocab",
    "DataFormatError", "DataSkipWarning", "MissingDataError",
    "WIKICLIR_LANGUAGES", "available_languages", "language_code",
    "clear_cache", "load_dataset", "load_for", "load_polyglot", "read_polyglot", "save_polyglot",
    "table1", "PROFILES", "generate_benchmark", "build_vocab", "tokenize", "load_wikiclir",
    "load_clirmatrix", "SOURCES", "source_of",
]
