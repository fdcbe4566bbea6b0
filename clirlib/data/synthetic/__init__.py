"""The embedded benchmark: a WikiCLIR-like collection generator (Section 5, "Datasets"; Table 1).

WikiCLIR itself is 7 GB; this package writes a small stand-in with the same structure,
in the same file layout, so that everything downstream reads it through the real
loader (``load_wikiclir``) exactly like the real data. Same profile and seed give
byte-identical files; the sizes per profile are ``clirlib.profiles.SIZES``.

One module per stage: ``settings`` (languages, Table 1's SR counts, the difficulty
knobs), ``lexicon`` (the words of every language), ``concepts`` (concepts, domains,
keywords, the link graph), ``texts`` (token streams of queries and articles), ``writing``
(embeddings, the WikiCLIR files, each query's domain, the manifest; ``generate_benchmark``),
``kg`` (HIKE's knowledge graph of the benchmark). Everything the generator knows is written
with the benchmark (issue 24): outside this package nothing replays it, and only
``generate_benchmark`` completes a folder generated before a file existed.

No word string is shared between English and a document language, so a model has to
learn the cross-lingual alignment. The difficulty (``DIFFICULTY``) is set by a
method-free statistic (``clirlib.data.calibration``), and the generator imports no loss,
similarity, encoder or trainer (a test checks this), so it cannot favour a method.
``docs/benchmark.md`` describes the generative model and the calibration.
"""

from .concepts import build_universe, sr_per_query
from .lexicon import lexicons
from .settings import CATEGORIES, DIFFICULTY, SR_PER_QUERY, Difficulty
from .writing import GENERATOR_VERSION, default_dir, generate_benchmark, write_texts

__all__ = ["CATEGORIES", "DIFFICULTY", "GENERATOR_VERSION", "SR_PER_QUERY", "Difficulty", "build_universe",
           "default_dir", "generate_benchmark", "lexicons", "sr_per_query", "write_texts"]
