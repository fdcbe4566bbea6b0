"""The embedded benchmark's knowledge graph: how long writing it takes (standalone).

    python bench/kg_bench.py [--profiles ci default]

Issue 14's budget: at most 5 s of generation time on the ``default`` profile for the KG
(entities, triples, gold links) beside the collection. Prints each profile's seconds
(the best of ``--repeat`` runs, lexicons and universes built outside the timing) and its
ratio to the budget.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

BUDGET_SECONDS = 5.0


def kg_seconds(profile: str, repeat: int) -> float:
    from clirlib import profiles
    from clirlib.data import synthetic
    from clirlib.data.synthetic.kg import write_benchmark_kg

    p, d = profiles.SIZES[profile], synthetic.DIFFICULTY
    lex = synthetic.lexicons(p.n_meanings, 0, d)
    universes = {lang: synthetic.build_universe(p, lang, 0, d) for lang in profiles.LANGS}
    best = float("inf")
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            write_benchmark_kg(Path(tmp), p, 0, d, lex, universes)
            best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    from clirlib import profiles

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["ci", "default"], choices=profiles.NAMES)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1, not {args.repeat}")
    for profile in args.profiles:
        s = kg_seconds(profile, args.repeat)
        print(f"{profile}: KG written in {s:.2f} s (best of {args.repeat}); "
              f"{s / BUDGET_SECONDS:.2f} of the {BUDGET_SECONDS:g} s budget", flush=True)


if __name__ == "__main__":
    main()
