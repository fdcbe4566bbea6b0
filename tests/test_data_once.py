"""The embedded benchmark's domains file (clirlib.data.domains; issue 24, point 2)."""

from __future__ import annotations

import pytest

from clirlib.data import domains as dom
from clirlib.data.errors import DataFormatError


@pytest.mark.parametrize("body, problem", [
    ("query_id\tentity\tdomain\n", "header must be"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\n", "expected 4 tab-separated fields"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\t1\n7\tE2\t3\t1\n", "query '7' listed twice"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t-2\t1\n", "domain must be an integer from 0"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\tyes\n", "mr must be 0 or 1"),
    ("query_id\tentity\tdomain\tmr\n\tE1\t2\t1\n", "empty query id or entity"),
])
def test_domains_reader_names_file_line_and_problem(tmp_path, body, problem):
    path = tmp_path / "domains" / "fr.tsv"
    path.parent.mkdir()
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DataFormatError, match=problem):
        dom.read_domains(path)


def test_domains_round_trip(tmp_path):
    rows = [(100, "E3", 1, True), ("007", "E9", 0, False)]
    path = dom.write_domains(dom.domains_file(tmp_path, "sw"), rows)
    assert path == tmp_path / "domains" / "sw.tsv"
    assert dom.read_domains(path) == {"100": dom.QueryDomain("E3", 1, True), "007": dom.QueryDomain("E9", 0, False)}
    assert dom.mr_query_domains(tmp_path, "sw") == {"100": 1}
