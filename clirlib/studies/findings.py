"""Result sentences of notebooks 09 and 10, computed from the frames of the run in hand.

A notebook's Markdown cells explain what is run and how to read it; every sentence that
states a result comes from a function here, so the prose a profile shows is always that
profile's numbers (``IPython.display.Markdown(findings.seeds_sentences(...))``).

Notebook 09 (seeds and significance for Tables 2 and 3):

- :func:`mean_std_table`: mean +- sample standard deviation over seeds per (language,
  system), tidy and as a display table;
- :func:`seeds_tests`: the comparisons of :func:`clirlib.studies.verdicts.evaluate` behind the
  Table 2 / Table 3 claims, with the seed-to-seed standard deviation of both sides, in the
  fixed column order :data:`SEEDS_TEST_COLUMNS` (``tables/seeds_significance_tests.csv``);
- :func:`comparison_grid`: those comparisons as a (pair x metric) display table;
- :func:`seeds_sentences`: per claim how many comparisons hold, do not hold or are
  inconclusive, and the seed-to-seed spread against the effects.

Notebook 10 (training stability): :func:`stability_sentences` from the frames of
:mod:`clirlib.studies.stability`.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np
import pandas as pd

from . import verdicts
from ..metrics import METRIC_NAMES
from ..stats import mean_std
from .hypotheses import ALPHA, ENCODER_LABELS, HYPOTHESES, LOSS_LABELS, POWER, Hypothesis, pairs

# --------------------------------------------------------------------------- notebook 09
#: The claims of Tables 2 and 3 (their grids are the runs of notebook 09).
TABLE_GRIDS = {"table2": "Table 2", "table3": "Table 3"}
TABLE_HYPOTHESES = tuple(h for h in HYPOTHESES if h.grid in TABLE_GRIDS)
#: Fixed column order of ``tables/seeds_significance_tests.csv``.
SEEDS_TEST_COLUMNS = ["table", "hypothesis", "kind", "margin", "a", "b", "lang", "metric", "mean_a", "mean_b",
                      "effect", "ci_low", "ci_high", "p", "p_holm", "p_against", "p_against_holm", "mde", "se",
                      "seed_sd_a", "seed_sd_b", "n_queries", "n_seeds", "verdict"]
#: Display marks of a comparison's verdict (tables and the heat map).
MARKS = {"holds": "+", "does not hold": "x", "inconclusive": "", "not tested": ""}
_SYSTEM_LABELS = {"loss": LOSS_LABELS, "encoder": ENCODER_LABELS}
_TIDY = ("lang", "metric", "mean", "std", "n_seeds")


def mean_std_table(runs: pd.DataFrame, key: str, order: Iterable[str],
                   langs: Iterable[str] | None = None,
                   paper: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(tidy, display) mean and sample std over seeds per (lang, ``key``): ``tidy`` is
    :func:`clirlib.stats.mean_std` (one row per lang, system, metric); ``display`` has one
    row per (lang, system), a "mean +- std" cell per metric (the mean alone for one seed)
    and ``n``, the number of seeds. ``paper`` (``reported.table2()`` / ``table3()``: columns
    lang, ``key`` and the metrics) adds the paper's value to each cell it has: "0.469 ± 0.008
    (paper 0.438)"."""
    ms = mean_std(runs, ["lang", key], METRIC_NAMES)
    cell = [f"{m:.3f} ± {s:.3f}" if n > 1 else f"{m:.3f}" for m, s, n in zip(ms["mean"], ms["std"], ms["n_seeds"])]
    if paper is not None:
        ref = paper.set_index(["lang", key])
        cell = [c if (lang, k) not in ref.index or pd.isna(ref.at[(lang, k), metric]) else
                f"{c} (paper {ref.at[(lang, k), metric]:.3f})"
                for c, lang, k, metric in zip(cell, ms["lang"], ms[key], ms["metric"])]
    out = ms.assign(cell=cell).pivot_table(index=["lang", key], columns="metric", values="cell", aggfunc="first",
                                           sort=False)[list(METRIC_NAMES)]
    out["n"] = ms.groupby(["lang", key], sort=False)["n_seeds"].first()
    langs = list(dict.fromkeys(ms["lang"])) if langs is None else list(langs)
    out = out.reindex([(lang, k) for lang in langs for k in order if (lang, k) in out.index])
    out.columns.name = "metric"
    return ms, out


def _system_key(ms: pd.DataFrame) -> str:
    (key,) = [c for c in ms.columns if c not in _TIDY]
    return key


def _seed_sd(mean_std: Iterable[pd.DataFrame]) -> dict[tuple[str, str], float]:
    """{(verdicts label of a system, e.g. 'SOSL fr'; metric): seed-to-seed std}."""
    out = {}
    for ms in mean_std:
        key = _system_key(ms)
        labels = _SYSTEM_LABELS.get(key, {})
        for r in ms.itertuples(index=False):
            d = r._asdict()
            out[(f"{labels.get(d[key], d[key])} {d['lang']}", d["metric"])] = float(d["std"])
    return out


def _lang(a: str, b: str) -> str:
    la, lb = a.rsplit(" ", 1)[-1], b.rsplit(" ", 1)[-1]
    return la if la == lb else f"{la} vs {lb}"


def seeds_tests(comparisons: pd.DataFrame, mean_std: Iterable[pd.DataFrame] = (),
                hypotheses: Iterable[Hypothesis] = TABLE_HYPOTHESES) -> pd.DataFrame:
    """The comparisons (``verdicts.evaluate(...)[1]``) of ``hypotheses``, with the table,
    kind and margin of their claim, the language(s) compared and the seed-to-seed
    standard deviation of each side's metric (from ``mean_std``, the tidy frames of
    :func:`mean_std_table`; NaN when absent), in the column order :data:`SEEDS_TEST_COLUMNS`."""
    hyps = {h.name: h for h in hypotheses}
    if comparisons is None or comparisons.empty:
        return pd.DataFrame(columns=SEEDS_TEST_COLUMNS)
    t = comparisons[comparisons["hypothesis"].isin(list(hyps))].copy()
    t["table"] = [TABLE_GRIDS.get(hyps[h].grid, hyps[h].grid) for h in t["hypothesis"]]
    t["kind"] = [hyps[h].kind for h in t["hypothesis"]]
    t["margin"] = [hyps[h].margin for h in t["hypothesis"]]
    t["lang"] = [_lang(a, b) for a, b in zip(t["a"], t["b"])]
    sd = _seed_sd(mean_std)
    t["seed_sd_a"] = [sd.get((a, m), np.nan) for a, m in zip(t["a"], t["metric"])]
    t["seed_sd_b"] = [sd.get((b, m), np.nan) for b, m in zip(t["b"], t["metric"])]
    order = {h: i for i, h in enumerate(hyps)}
    t = t.sort_values("hypothesis", key=lambda s: s.map(order), kind="stable")
    return t[SEEDS_TEST_COLUMNS].reset_index(drop=True)


def _match(ms: pd.DataFrame, flt: Mapping[str, object]) -> pd.DataFrame:
    mask = np.ones(len(ms), dtype=bool)
    for k, v in flt.items():
        mask &= (ms[k] == v).to_numpy()
    return ms[mask]


def _side_label(flt: Mapping[str, object], key: str) -> str:
    return f"{_SYSTEM_LABELS.get(key, {}).get(flt[key], flt[key])} {flt['lang']}"


def seed_spread(mean_std: Iterable[pd.DataFrame],
                hypotheses: Iterable[Hypothesis] = TABLE_HYPOTHESES) -> pd.DataFrame:
    """The difference of seed means A - B of every (pair, metric) of the claims, beside the
    seed-to-seed standard deviation of both systems, from the tidy frames of
    :func:`mean_std_table` alone (descriptive: it exists also for claims that were not
    tested). Columns: table, hypothesis, a, b, metric, diff, sd_a, sd_b."""
    frames = list(mean_std)
    rows = []
    for h in hypotheses:
        need = set(h.a) | set(h.b) | set(h.match) | {"lang"}
        ms = next((f for f in frames if need <= set(f.columns)), None)
        if ms is None:
            continue
        key = _system_key(ms)
        for fa, fb in pairs(h, ms):
            if "lang" not in fa or "lang" not in fb or key not in fa or key not in fb:
                continue
            for m in h.metrics:
                a, b = _match(ms, {**fa, "metric": m}), _match(ms, {**fb, "metric": m})
                if len(a) != 1 or len(b) != 1:
                    continue
                rows.append({"table": TABLE_GRIDS.get(h.grid, h.grid), "hypothesis": h.name,
                             "a": _side_label(fa, key), "b": _side_label(fb, key), "metric": m,
                             "diff": float(a["mean"].iloc[0] - b["mean"].iloc[0]),
                             "sd_a": float(a["std"].iloc[0]), "sd_b": float(b["std"].iloc[0])})
    return pd.DataFrame(rows, columns=["table", "hypothesis", "a", "b", "metric", "diff", "sd_a", "sd_b"])


def comparison_grid(tests: pd.DataFrame, table: str) -> pd.DataFrame:
    """One row per compared pair of ``table``, one column per metric: the effect (A - B),
    its 95 % interval and the verdict's mark (:data:`MARKS`: + holds, x does not hold,
    blank inconclusive)."""
    t = tests[tests["table"] == table]
    cell = [f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] {MARKS.get(v, '')}".rstrip()
            for e, lo, hi, v in zip(t["effect"], t["ci_low"], t["ci_high"], t["verdict"])]
    grid = t.assign(cell=cell, pair=[f"{a} vs {b}" for a, b in zip(t["a"], t["b"])]).pivot_table(
        index=["hypothesis", "pair"], columns="metric", values="cell", aggfunc="first", sort=False)
    return grid[[m for m in METRIC_NAMES if m in grid.columns]].fillna("")


def _count(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _verdict_counts(v: pd.Series) -> str:
    k = {w: int((v == w).sum()) for w in ("holds", "does not hold", "inconclusive")}
    return (f"{k['holds']} {'holds' if k['holds'] == 1 else 'hold'}, "
            f"{k['does not hold']} {'does' if k['does not hold'] == 1 else 'do'} not hold and "
            f"{k['inconclusive']} {'is' if k['inconclusive'] == 1 else 'are'} inconclusive")


def _claim_words(verdict: str) -> str:
    return {"holds": "the claim *holds*", "does not hold": "the claim *does not hold*",
            "inconclusive": "the claim is *inconclusive*"}.get(verdict, f"the claim is *{verdict}*")


def _per_lang(g: pd.DataFrame) -> str:
    parts = [f"{lang} {int((x['verdict'] == 'holds').sum())}/{len(x)}" for lang, x in g.groupby("lang", sort=False)]
    return ", ".join(parts)


def seeds_sentences(tests: pd.DataFrame, summary: pd.DataFrame, mean_std: Iterable[pd.DataFrame] = (),
                    hypotheses: Iterable[Hypothesis] = TABLE_HYPOTHESES) -> str:
    """Markdown: per claim of Tables 2 and 3 its verdict and how many comparisons hold / do
    not hold / are inconclusive (per language where it compares languages one by one),
    the contrary comparisons, the detectable effect of the inconclusive ones, and per table
    the seed-to-seed standard deviation against the differences the claims compare
    (:func:`seed_spread`, also for claims that were not tested). ``tests``:
    :func:`seeds_tests`; ``summary``: ``verdicts.evaluate(...)[0]``; ``mean_std``: the tidy
    frames of :func:`mean_std_table`."""
    hyps = [h for h in hypotheses]
    summary = verdicts.claim_rows(summary)  # the claims' own rows (language rows aside)
    rows = summary.set_index("hypothesis")
    lines = []
    # the comparisons of tested claims: a claim that is not tested (a system failed the
    # learning gate in some language) keeps its other languages' verdicts in ``tests``
    ours = summary[summary["hypothesis"].isin([h.name for h in hyps])]
    tested_claims = ours.loc[ours["verdict"] != "not tested", "hypothesis"]
    tested = tests[tests["hypothesis"].isin(tested_claims) & (tests["verdict"] != "not tested")]
    n_claims, n_tested = len(ours), len(tested_claims)
    if len(tested):
        lines.append(f"- **All claims of Tables 2 and 3:** {n_tested} of {_count(n_claims, 'claim')} tested; of their "
                     f"{_count(len(tested), 'comparison')} (pair of systems x metric, Holm-corrected within each "
                     f"claim), {_verdict_counts(tested['verdict'])}.")
    else:
        lines.append(f"- **All claims of Tables 2 and 3:** none of the {_count(n_claims, 'claim')} was tested on "
                     f"these runs (the reasons follow).")
    for h in hyps:
        if h.name not in rows.index:
            continue
        r = rows.loc[h.name]
        head = f"- **{r['claim']}** ({r['source']}; `{h.name}`):"
        if r["verdict"] == "not tested":
            lines.append(f"{head} *not tested*: {r['reason']}.")
            continue
        g = tested[tested["hypothesis"] == h.name]
        s = f"{head} of {_count(len(g), 'comparison')}, {_verdict_counts(g['verdict'])}, so {_claim_words(r['verdict'])}."
        if "lang" in h.match and g["lang"].nunique() > 1:
            s += f" Holding per language: {_per_lang(g)}."
        against = verdicts.strongest_contrary_first(h, g[g["verdict"] == "does not hold"])
        if len(against):
            shown = against.head(3)
            s += (" Contrary: " + "; ".join(f"{x.a} vs {x.b}, {x.metric}: {x.effect:+.3f} "
                                           f"(95 % CI {x.ci_low:+.3f} to {x.ci_high:+.3f})" for x in shown.itertuples())
                  + (f"; and {len(against) - len(shown)} more" if len(against) > len(shown) else "") + ".")
        unsure = g[g["verdict"] == "inconclusive"]
        if len(unsure):
            mde = unsure["mde"].median()
            if h.kind == "superiority":
                s += (f" For the inconclusive ones a true difference of at least {mde:.3f} (median over them; "
                      f"margin {h.margin:g}) would have been decided as holding with {POWER:.0%} power.")
            else:
                s += (f" For the inconclusive ones a true distance of {mde:.3f} (median over them) from the margin "
                      f"{h.margin:g} would have been decided as holding with {POWER:.0%} power.")
        lines.append(s)
    spread = seed_spread(mean_std, hyps)
    for table in dict.fromkeys(spread["table"]):
        g = spread[spread["table"] == table]
        sd = pd.concat([g[["a", "metric", "sd_a"]].set_axis(["system", "metric", "sd"], axis=1),
                        g[["b", "metric", "sd_b"]].set_axis(["system", "metric", "sd"], axis=1)])
        sd = sd.drop_duplicates(["system", "metric"])["sd"].dropna()
        if sd.empty:
            continue
        below = g["diff"].abs() < np.fmax(g["sd_a"], g["sd_b"])
        per = ", ".join(f"`{h}` {int(b.sum())}/{len(b)}" for h, b in below.groupby(g["hypothesis"], sort=False))
        lines.append(
            f"- **Seeds, {table}:** the seed-to-seed standard deviation of one system's metric has median "
            f"{sd.median():.3f} (largest {sd.max():.3f}); the differences A - B of the seed means that the claims "
            f"compare have median absolute size {g['diff'].abs().median():.3f} (largest {g['diff'].abs().max():.3f}). "
            + (f"None of the {_count(len(g), 'difference')} is smaller than the larger standard deviation of its two "
               f"systems." if not below.any() else
               f"{int(below.sum())} of {_count(len(g), 'difference')} {'is' if below.sum() == 1 else 'are'} smaller "
               f"than the larger standard deviation of their two systems (per claim: {per}): gaps that one run per "
               f"system, as the paper reports, can show in either direction."))
    return "\n".join(lines)


# --------------------------------------------------------------------------- notebook 10
def _fired(summary: pd.DataFrame, trace: pd.DataFrame) -> pd.DataFrame:
    """Steps whose gradient norm exceeded the clipping threshold, in runs with clipping
    (their own runs only, so a reused run is not counted twice)."""
    own = summary[summary["own_run"].astype(bool) & (summary["clip"].astype(str) != "none")]
    keys = set(zip(own["regime"], own["epsilon"].astype(float), own["clip"].astype(str)))
    mask = np.array([k in keys for k in zip(trace["regime"], trace["epsilon"].astype(float), trace["clip"].astype(str))],
                    dtype=bool)  # a list, empty for an empty trace, would select columns, not rows
    t = trace[mask]
    return t[t["grad_norm"] + 1e-6 > t["clip"].astype(str).astype(float)]


def stability_sentences(summary: pd.DataFrame, versus: pd.DataFrame, trace: pd.DataFrame,
                        small_norm: Mapping[str, str] | None = None, step: int = 5) -> str:
    """Markdown findings of notebook 10, every number from its frames.

    ``summary``: one row per (regime, epsilon, clip) setting (``stability.grid_summary``);
    ``versus``: SCS against plain cosine (``stability.scs_vs_cosine``); ``trace``: the
    per-step gradient norms (``stability.grid_trace``); ``small_norm``: {small-norm regime:
    the same regime at its ordinary norm} (``stability.small_norm_pairs``); ``step``: the
    step at which a trace is read after the first.
    """
    lines = []
    fail = summary[~summary["finished"].astype(bool)]
    s = f"- **Non-finite values:** {len(fail)} of {_count(len(summary), 'run')} stopped at a NaN or infinite loss or gradient"
    s += (": " + "; ".join(f"{r.regime}, eps = {r.epsilon:g}, clipping {r.clip} (epoch {r.stopped_epoch:.0f}, "
                           f"step {r.stopped_step:.0f})" for r in fail.itertuples()) + ".") if len(fail) else "."
    lines.append(s)

    fired = _fired(summary, trace)
    clipped = summary[summary["clip"].astype(str) != "none"].groupby("epsilon")[["clipped_steps", "steps"]].sum()
    share = "; ".join(f"eps = {eps:g}: {r['clipped_steps']:.0f} of {r['steps']:.0f} steps "
                      f"({r['clipped_steps'] / r['steps']:.2%})" for eps, r in clipped.iterrows() if r["steps"] > 0)
    s = f"- **Clipping:** steps clipped over all regimes, {share}."
    if len(fired):
        where = fired.groupby(["regime", "epsilon"], sort=False)["step"].agg(list)
        s += " Clipping fired at " + "; ".join(
            f"{regime}, eps = {eps:g}: step{'s' if len(st) > 1 else ''} {', '.join(str(int(x)) for x in st)}"
            for (regime, eps), st in where.items()) + "."
    else:
        s += " Clipping never fired."
    reused = int((~summary["own_run"].astype(bool)).sum())
    s += (f" {reused} of {_count(len(summary), 'setting')} without clipping are the same run as with it "
          f"(clipping never fired there).")
    lines.append(s)

    parts = []
    for regime, g in versus.groupby("regime", sort=False):
        rs = summary[(summary["regime"] == regime) & (summary["clip"] == summary["clip"].iloc[0])].set_index("epsilon")
        first = ", ".join(f"{rs.loc[e, 'grad_norm_first_step']:.3g} at eps = {e:g}" if pd.notna(rs.loc[e, 'grad_norm_first_step'])
                          else f"none at eps = {e:g} (the run stopped, or recorded no steps)" for e in rs.index)
        parts.append(f"{regime}: {g['max grad cosine / SCS'].min():.3g}x to {g['max grad cosine / SCS'].max():.3g}x "
                     f"(first-step norm {first})")
    if parts:
        lines.append("- **Largest gradient norm, plain cosine over SCS**, per regime: " + "; ".join(parts) + ".")

    cos = summary[(summary["epsilon"] == 0.0) & summary["finished"].astype(bool)
                  & (summary["clip"] == summary["clip"].iloc[0])]
    parts = []
    for r in cos.itertuples():
        t = trace[(trace["regime"] == r.regime) & (trace["epsilon"].astype(float) == 0.0)
                  & (trace["clip"].astype(str) == str(r.clip))].set_index("step")["grad_norm"]
        if len(t) >= step:
            parts.append(f"{r.regime}: {t.iloc[0]:.3g} → {t.loc[step]:.3g} → {t.median():.3g}")
    if parts:
        lines.append(f"- **Plain cosine's gradient norm over training** (clipping {cos['clip'].iloc[0]}; "
                     f"first step → step {step} → median of the run): " + "; ".join(parts) + ".")

    if len(versus):
        better = versus["NDCG@5 SCS"] > versus["NDCG@5 cosine"]
        tested = versus["p_value"].notna()
        sig, sig_h = tested & (versus["p_value"] < ALPHA), tested & (versus["p_holm"] < ALPHA)
        per = "; ".join(f"{regime} {int(b.sum())}/{len(b)}" for regime, b in better.groupby(versus["regime"], sort=False))
        diff = versus["NDCG@5 SCS"] - versus["NDCG@5 cosine"]
        lines.append(
            f"- **SCS against plain cosine, test NDCG@5** (one run per setting; settings without clipping whose "
            f"runs are the clipped ones are counted once): SCS is higher in {int(better.sum())} of "
            f"{_count(len(versus), '(regime, clipping, eps) cell')} (per regime: {per}), by {diff.min():+.3f} to "
            f"{diff.max():+.3f}. Paired randomization test "
            f"over test queries: p < {ALPHA:g} in {_count(int((sig & better).sum()), 'cell')} for SCS and "
            f"{int((sig & ~better).sum())} for cosine; after Holm over the {_count(int(tested.sum()), 'cell')}, "
            f"{int((sig_h & better).sum())} for SCS and {int((sig_h & ~better).sum())} for cosine.")

    cl = summary.pivot_table(index=["regime", "epsilon"], columns="clip", values="NDCG@5", sort=False)
    if {"none"} < set(cl.columns):
        on = [c for c in cl.columns if c != "none"][0]
        d = (cl[on] - cl["none"]).dropna()
        if len(d):
            worst = d.abs().idxmax()
            s = (f"- **Clipping on against off:** test NDCG@5 differs by more than 0.005 in {int((d.abs() > 0.005).sum())} "
                 f"of {len(d)} (regime, eps) pairs; the largest change is {d.loc[worst]:+.3f} (on minus off; "
                 f"{worst[0]}, eps = {worst[1]:g}).")
            fired_regimes = list(dict.fromkeys(fired["regime"]))
            for regime in fired_regimes:
                g = summary[(summary["regime"] == regime) & (summary["clip"] == on)].set_index("epsilon")["NDCG@5"]
                off = cl.loc[(regime, 0.0), "none"] if (regime, 0.0) in cl.index else np.nan
                scs = g.drop(index=0.0, errors="ignore").dropna()  # a stopped run has no NDCG@5
                if len(scs) and 0.0 in g.index:
                    s += (f" In {regime}, where clipping fired, plain cosine reaches {g.loc[0.0]:.3f} with clipping and "
                          f"{off:.3f} without; the best SCS setting {scs.max():.3f} (eps = {scs.idxmax():g}).")
            lines.append(s)

    if small_norm:
        parts = []
        first = summary[summary["clip"] == summary["clip"].iloc[0]].set_index(["regime", "epsilon"])["grad_norm_first_step"]
        for small, ordinary in small_norm.items():
            for eps in sorted({e for r, e in first.index if r == small and e > 0}):
                if (ordinary, eps) in first.index:
                    a, b = first.loc[(small, eps)], first.loc[(ordinary, eps)]
                    if pd.isna(a) or pd.isna(b):
                        parts.append(f"{small} at eps = {eps:g}: no first-step norm to compare (a run stopped, or "
                                     f"recorded no steps)")
                        continue
                    how = "smaller" if a < b else "larger" if a > b else "the same"
                    parts.append(f"{small} at eps = {eps:g}: {a:.3g} against {b:.3g} in {ordinary} "
                                 f"({a / b:.3g}x, {how})")
        if parts:
            lines.append("- **SCS at small norms, first-step gradient norm** against the same regime at its "
                         "ordinary norm: " + "; ".join(parts) + ".")
    return "\n".join(lines)


def number(v: float) -> str:
    """A table number: three significant digits from 1000 on, else three decimals."""
    return f"{v:.3g}" if abs(v) >= 1e3 else f"{v:.3f}"
