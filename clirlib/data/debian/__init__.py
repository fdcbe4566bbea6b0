"""The Debian real-text benchmark (issue 27): Debian's translated package descriptions (DDTP)
read from apt's index files (``index``) and written in the WikiCLIR layout with
Polyglot-format embeddings (``build``)."""

from .build import build, stats_table
from .index import APT_LISTS, HOW_TO_GET, find_index_files

__all__ = ["build", "stats_table", "APT_LISTS", "HOW_TO_GET", "find_index_files"]
