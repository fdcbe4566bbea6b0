"""The verdicts in words: one Markdown sentence per claim and the README's claims table,
every number taken from a summary row of :func:`clirlib.studies.verdicts.evaluate`.
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from . import paper_tables
from .hypotheses import ALL_LANGUAGES, HYPOTHESES, POWER
from .verdicts import claim_rows


def _effect_words(r: Mapping[str, Any], prefix: str = "") -> str:
    e, lo, hi = r[f"{prefix}effect"], r[f"{prefix}ci_low"], r[f"{prefix}ci_high"]
    p = r[f"{prefix}p_holm"]
    if r["kind"] == "at_most":
        return (f"relative drop {e:+.1%} (95 % CI {lo:+.1%} to {hi:+.1%}, p_Holm = {p:.3g}; "
                f"margin {r['margin']:.0%})")
    if r["kind"] == "closes_gap":
        return f"closes {e:.0%} of the gap (95 % CI {lo:.0%} to {hi:.0%}, p_Holm = {p:.3g}; margin {r['margin']:.0%})"
    return f"difference {e:+.3f} (95 % CI {lo:+.3f} to {hi:+.3f}, p_Holm = {p:.3g}; margin {r['margin']:g})"


#: Claims that compare two languages (unpaired): their rows are language pairs ("sw vs fr").
BETWEEN_LANGUAGES = frozenset(h.name for h in HYPOTHESES if not h.paired)


def _holds_in(r: Mapping[str, Any]) -> str:
    n, untested = int(r["n_languages"]), int(r["n_languages"]) - int(r["n_languages_tested"])
    what = "language pair" if r["hypothesis"] in BETWEEN_LANGUAGES else "language"
    return (f"holds in {int(r['n_languages_holding'])} of {n} {what}{'s' if n != 1 else ''}"
            + (f" ({untested} not tested)" if untested else ""))


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def by_language(summary: pd.DataFrame, hypothesis: str) -> dict[str, list[str]]:
    """Verdict -> the languages (or language pairs) of ``hypothesis``'s language rows that have it."""
    rows = summary[(summary["hypothesis"] == hypothesis) & (summary["language"] != ALL_LANGUAGES)]
    out: dict[str, list[str]] = {}
    for lang, verdict in zip(rows["language"], rows["verdict"]):
        out.setdefault(verdict, []).append(str(lang))
    return out


def sentence(r: Mapping[str, Any], languages: Mapping[str, list[str]] | None = None) -> str:
    """One Markdown sentence for a claim's row of the summary, every number taken from the row;
    ``languages`` (:func:`by_language`) says where a claim `not tested` as a whole was decided."""
    head = f"**{r['claim']}** ({r['source']}): *{r['verdict']}*."
    n = f"{int(r['n_queries'])} test queries, {int(r['n_seeds'])} seeds, {int(r['n_comparisons'])} comparisons"
    if r["verdict"] == "not tested":
        languages = languages or {}
        decided = [v for v in languages if v != "not tested"]
        where = ""
        if decided:  # some languages pass the gate: their verdicts, not "undecided"
            parts = [f"{v} in {_and(languages[v])}" for v in (*decided, "not tested") if v in languages]
            where = f" By language: {'; '.join(parts)}."
        if not isinstance(r["deciding"], str) or not r["deciding"] or not np.isfinite(r["effect"]):
            return f"{head} Not tested because {r['reason']}.{where}"
        if decided:
            return (f"{head} Not tested because {r['reason']}.{where} The comparison that would decide the claim "
                    f"is {r['deciding']}: {_effect_words(r)} ({n}).")
        return (f"{head} Not tested because {r['reason']}. Its comparisons, undecided: the one that "
                f"would decide it is {r['deciding']}: {_effect_words(r)} ({n}).")
    where = f" It {_holds_in(r)}; strongest {r['strongest']}: {_effect_words(r, 'strongest_')}."
    if r["verdict"] == "holds":
        return f"{head} Every comparison holds; the weakest is {r['deciding']}: {_effect_words(r)} ({n}).{where}"
    if r["verdict"] == "does not hold":
        return f"{head} Contradicted by {r['deciding']}: {_effect_words(r)} ({n}).{where}"
    unit = {"at_most": "relative drop", "closes_gap": "share of the gap"}.get(r["kind"], "difference")
    mde = f"{r['mde']:.1%}" if r["kind"] in ("at_most", "closes_gap") else f"{r['mde']:.3f}"
    reach = ("a true effect of at least" if r["kind"] == "superiority"
             else "a true distance from the margin of at least")
    return (f"{head} Furthest from holding: {r['deciding']}: {_effect_words(r)}; {reach} {mde} ({unit}) would be "
            f"detected with {POWER:.0%} power ({n}).{where}")


def sentences(summary: pd.DataFrame) -> str:
    """The summary as a Markdown list, one computed sentence per claim (language rows aside)."""
    return "\n".join(f"- {sentence(r, by_language(summary, r['hypothesis']))}"
                     for r in claim_rows(summary).to_dict("records"))


README_START, README_END = "<!-- claims:start -->", "<!-- claims:end -->"
#: The README's block of the claims decided on real text (notebook 13, ``tables/realtext_claims.csv``).
REALTEXT_MARKERS = ("<!-- realtext:start -->", "<!-- realtext:end -->")


def _cell(r: Mapping[str, Any], prefix: str) -> str:
    """'A vs B, metric: effect [CI], p' of the deciding (prefix '') or strongest comparison."""
    e = r[f"{prefix}effect"]
    if not (isinstance(e, float) and np.isfinite(e)):
        return ""
    pct = r["kind"] in ("at_most", "closes_gap")
    f = (lambda v: f"{v:+.1%}") if pct else (lambda v: f"{v:+.3f}")
    name = r["deciding"] if prefix == "" else r["strongest"]
    return (f"{name}: {f(e)} [{f(r[f'{prefix}ci_low'])}, {f(r[f'{prefix}ci_high'])}], "
            f"p {r[f'{prefix}p_holm']:.3g}")


def _verdict_cell(rr: Mapping[str, Any] | None, prefix: str = "") -> str:
    """A claim's verdict in another setting and its weakest (deciding) comparison; empty if none."""
    if rr is None:
        return ""
    w = rr["verdict"] if rr["verdict"] == "not tested" else f"**{rr['verdict']}**"
    return f"{w}{prefix}{': ' + _cell(rr, '') if _cell(rr, '') else ''}"


def markdown_table(summary: pd.DataFrame, real_text: pd.DataFrame | None = None,
                   where_dssm_learns: pd.DataFrame | None = None, paper: bool = False) -> str:
    """The summary as the README's Markdown table (regenerated from ``claims_summary.csv``):
    one line per claim with the languages it holds in, its strongest and its weakest
    (deciding) comparison, effect and interval printed also when it is not tested. With
    ``real_text`` (the same claims decided on the Debian benchmark, ``realtext_paper_claims.csv``)
    a column gives each claim's verdict there and its weakest (deciding) comparison, empty where
    real text does not decide it. With ``where_dssm_learns`` (Table 3's claims decided at the
    training size where the DSSM models pass the gate, notebook 16's ``curves_table3_verdicts.csv``,
    with its ``train_queries``) another column does the same for those claims. With ``paper``, a
    last column reads the paper's own Table 2 or 3 against each claim stated on it
    (:mod:`clirlib.studies.paper_tables`)."""
    columns = [(name, {r["hypothesis"]: r for r in claim_rows(df).to_dict("records")})
               for name, df in (("real text (Debian)", real_text), ("where DSSM learns (notebook 16)", where_dssm_learns))
               if df is not None]
    extra = "".join(f" {name} |" for name, _ in columns), " --- |" * len(columns)
    own = ({r["hypothesis"]: paper_tables.cell(r) for r in paper_tables.summary(paper_tables.comparisons()).to_dict("records")}
           if paper else None)
    lines = ["| claim | source | verdict | languages | strongest comparison: effect [95 % CI], p (Holm) | "
             "weakest comparison: effect [95 % CI], p (Holm) | MDE | queries x seeds | not tested because |" + extra[0]
             + (" the paper's own table (one run a cell: read, not tested) |" if paper else ""),
             "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- |" + extra[1] + (" --- |" if paper else "")]
    for r in claim_rows(summary).to_dict("records"):
        pct = r["kind"] in ("at_most", "closes_gap")
        mde = "" if not np.isfinite(r["mde"]) else (f"{r['mde']:.1%}" if pct else f"{r['mde']:.3f}")
        word = r["verdict"] if r["verdict"] == "not tested" else f"**{r['verdict']}**"
        langs = _holds_in(r) if int(r["n_languages"]) else ""
        size = f"{int(r['n_queries'])} x {int(r['n_seeds'])}" if int(r["n_queries"]) else ""
        line = (f"| {r['claim']} | {r['source']} | {word} | {langs} | {_cell(r, 'strongest_')} | {_cell(r, '')} | "
                f"{mde} | {size} | {r['reason'] if isinstance(r['reason'], str) else ''} |")
        for name, rows in columns:
            rr = rows.get(r["hypothesis"])
            at = (f" ({int(rr['train_queries']):,} training queries)"
                  if rr is not None and "train_queries" in rr and pd.notna(rr["train_queries"]) else "")
            line += f" {_verdict_cell(rr, at)} |"
        lines.append(line + (f" {own.get(r['hypothesis'], '')} |" if paper else ""))
    return "\n".join(lines)
