"""Stage 1 of the embedded benchmark: the made-up words of every language.

Every language renders each latent meaning as its own word built from that language's
syllables; no string is shared between two languages; some meanings get a second form
(synonyms); the shortest forms go to the most frequent meanings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...determinism import rng
from ...profiles import LANGS
from .settings import Difficulty

# Syllables per language: onsets, nuclei, codas, P(1, 2, 3, 4 syllables).
_SYLLABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[float, ...]]] = {
    "en": (("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
            "st", "tr", "pl", "gr", "br", "th", "sh", "ch", "wh"),
           ("a", "e", "i", "o", "u", "ea", "oo", "ai", "y"),
           ("", "", "", "n", "r", "s", "t", "nd", "ng", "ck", "ll", "m", "rd", "st"),
           (0.25, 0.5, 0.2, 0.05)),
    "fr": (("b", "c", "d", "f", "g", "j", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "ch", "gn",
            "pr", "tr", "br", "cr", "fl"),
           ("a", "e", "é", "è", "i", "o", "ou", "au", "eau", "ai", "oi", "u", "eu", "ê"),
           ("", "", "", "n", "r", "s", "x", "t", "l", "ille", "ç", "mme"),
           (0.2, 0.5, 0.25, 0.05)),
    "it": (("b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "z", "gl", "gn", "sc",
            "ch", "gh", "tt", "ll", "zz", "cc", "pp"),
           ("a", "e", "i", "o", "u", "ia", "io", "ie", "uo", "à", "ò", "ì", "ù"),
           ("", "", "", "", "", "n", "l", "r"),
           (0.1, 0.45, 0.35, 0.1)),
    "sw": (("m", "mb", "n", "nd", "ng", "ny", "k", "w", "ch", "sh", "j", "t", "z", "y", "h", "l",
            "b", "f", "p", "s", "mw", "kw", "nj", "ki", "wa"),
           ("a", "e", "i", "o", "u"),
           ("",),
           (0.05, 0.4, 0.4, 0.15)),
    "tl": (("b", "d", "g", "h", "k", "l", "m", "n", "ng", "p", "s", "t", "w", "y", "mag", "pag",
            "ka", "nag", "pang"),
           ("a", "i", "o", "u", "e", "ay", "aw", "iy"),
           ("", "", "", "n", "ng", "t", "s", "k", "l"),
           (0.1, 0.5, 0.3, 0.1)),
}


@dataclass
class Lexicon:
    """Word strings of one language: function words, one form per meaning, synonyms."""

    words: np.ndarray  # (n_function + n_meanings + n_alt,) object array of str
    n_function: int
    n_meanings: int
    alt: np.ndarray  # (n_meanings,) index of the second form in words, or -1

    def render(self, m: np.ndarray, gen: np.random.Generator, use: float) -> np.ndarray:
        """Word ids for meanings ``m`` (negative = function word ``-m - 1``)."""
        wid = np.where(m < 0, -m - 1, self.n_function + m)
        content = m >= 0
        alt = np.full(len(m), -1, dtype=np.int64)
        alt[content] = self.alt[m[content]]
        swap = (alt >= 0) & (gen.random(len(m)) < use)
        wid[swap] = alt[swap]
        return wid


def candidates(gen: np.random.Generator, lang: str, n: int) -> list[str]:
    onsets, nuclei, codas, p = _SYLLABLES[lang]
    k = gen.choice(len(p), size=n, p=p) + 1
    o = gen.integers(len(onsets), size=(n, 4))
    v = gen.integers(len(nuclei), size=(n, 4))
    c = gen.integers(len(codas), size=(n, 4))
    return ["".join(onsets[o[i, j]] + nuclei[v[i, j]] + codas[c[i, j]] for j in range(k[i])) for i in range(n)]


def lexicons(n_meanings: int, seed: int, d: Difficulty) -> dict[str, Lexicon]:
    """One lexicon per language; no string appears in two languages."""
    used: set[str] = set()
    out = {}
    n_content = n_meanings - d.n_general
    for lang in ("en",) + LANGS:
        gen = rng(seed, "synthetic", "lexicon", lang)
        share = d.synonym_share_en if lang == "en" else d.synonym_share
        n_alt = int(round(share * n_content))
        need = d.n_function + n_meanings + n_alt
        forms: list[str] = []
        while len(forms) < need:
            for w in candidates(gen, lang, 2 * (need - len(forms)) + 64):
                if w not in used:
                    used.add(w)
                    forms.append(w)
                    if len(forms) == need:
                        break
        # Shortest forms for the most frequent words (function words, then by rank).
        order = np.argsort(np.fromiter((len(w) for w in forms), dtype=np.int64, count=need), kind="stable")
        main = np.array([forms[i] for i in order[: d.n_function + n_meanings]], dtype=object)
        alt_forms = [forms[i] for i in order[d.n_function + n_meanings:]]
        alt = np.full(n_meanings, -1, dtype=np.int64)
        with_alt = d.n_general + gen.choice(n_content, size=n_alt, replace=False)
        alt[np.sort(with_alt)] = d.n_function + n_meanings + np.arange(n_alt)
        words = np.concatenate([main, np.array(alt_forms, dtype=object)])
        out[lang] = Lexicon(words, d.n_function, n_meanings, alt)
    return out
