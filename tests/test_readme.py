"""The README stays a user's guide: at most 250 lines, every relative link in it and in
docs/*.md points to a file that exists (and to a heading that exists, when it names one),
and the claims block that ``cli_reproduce.update_readme`` regenerates is there exactly once."""

import re
from pathlib import Path

import pytest

from clirlib.studies import verdict_words

REPO = Path(__file__).resolve().parents[1]  # the checkout (not CLIRLIB_HOME: these are committed files)
MAX_README_LINES = 250  # issue 25: the README is a guide; measurement history lives in docs/timings.md
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def links(text: str) -> list[str]:
    """Targets of the Markdown links and images of ``text``, outside fenced code blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
        elif not fenced:
            out += LINK.findall(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_links_and_slugs_on_a_hand_made_page():
    page = "# A `b` c: d\n[x](docs/x.md#a-b-c-d) ![i](f.png)\n```\n[not](a link)\n```\n[web](https://e.org)\n"
    # by hand: two links outside the fence, the fenced one ignored; GitHub drops ` and :
    assert links(page) == ["docs/x.md#a-b-c-d", "f.png", "https://e.org"]
    assert anchors(page) == {"a-b-c-d"}


def test_readme_is_at_most_250_lines():
    n = len((REPO / "README.md").read_text(encoding="utf-8").splitlines())
    assert n <= MAX_README_LINES, f"README.md has {n} lines (at most {MAX_README_LINES}): move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...: not checked (no network)
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {file}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text(encoding="utf-8")):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    assert not broken, f"{page.name}: " + "; ".join(broken)


def test_claims_markers_once_each():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    for marker in (verdict_words.README_START, verdict_words.README_END):
        assert text.count(marker) == 1, f"README.md must hold {marker} exactly once"
    assert text.index(verdict_words.README_START) < text.index(verdict_words.README_END)
