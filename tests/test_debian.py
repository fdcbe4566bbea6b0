"""The Debian real-text benchmark builder (clirlib.data.debian) on hand-written index files.

The fixture imitates apt's ``Packages`` / ``Translation-<lang>`` files of one archive area:
multi-paragraph descriptions with " ." lines and a pre-formatted list, a package without a
French translation (frob-doc), one English text shared by two packages (gizmo, gizmo-nox),
two English texts whose French translations have the same tokens (widget, widget-legacy),
a French translation with no English description (orphan), a byte-order mark and CRLF
line ends (the French file), a continued field the builder does not keep (Tag).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from clirlib.data.debian import build, index, stats_table
from clirlib.data.debian.build import first_sentence, query_text, remove_names
from clirlib.data.debian.index import description, find_index_files, paragraphs, relation_names
from clirlib.data.errors import DataFormatError, MissingDataError
from clirlib.validate import ConfigError

M = {k: str(k) * 32 for k in range(1, 10)}  # md5 of description k: "111...1", "222...2", ...

PACKAGES = f"""\
Package: frobnicate
Source: frob
Version: 1.0-1
Architecture: amd64
Depends: libfrob2 (>= 2.1), perl:any | perl-base [amd64]
Recommends: frob-data
Description: Frobnication tool for text files
Description-md5: {M[1]}
Tag: role::program,
 use::editing

Package: frob-data
Source: frob (1.0-1)
Version: 1.0-1
Description: Data for the frobnication tool
Description-md5: {M[2]}

Package: frob-doc
Source: frob
Description-md5: {M[3]}

Package: libfrob2
Source: frob
Description-md5: {M[4]}

Package: perl
Description-md5: {M[5]}

Package: gizmo
Description-md5: {M[6]}

Package: gizmo-nox
Depends: widget
Description-md5: {M[6]}

Package: widget
Description-md5: {M[7]}

Package: widget-legacy
Source: widget
Description-md5: {M[8]}
"""

ENGLISH = f"""\
Package: frobnicate
Description-md5: {M[1]}
Description-en: Frobnication tool for text files
 Frobnicate rewrites text files in place. It keeps a backup.
 .
 Use frobnicate for speed:
   * fast mode
   * safe mode

Package: frob-data
Description-md5: {M[2]}
Description-en: Data for the frobnication tool
 This package contains the data of frob-data. Nothing else.

Package: frob-doc
Description-md5: {M[3]}
Description-en: Documentation for the frobnication tool

Package: libfrob2
Description-md5: {M[4]}
Description-en: Frobnication library
 Shared library of frobnication.

Package: perl
Description-md5: {M[5]}
Description-en: Larry Wall's Practical Extraction and Report Language
 Perl is a highly capable programming language. More text.

Package: gizmo
Description-md5: {M[6]}
Description-en: Gizmo viewer
 Gizmo shows gizmos. The gizmo-nox variant needs no X.

Package: gizmo-nox
Description-md5: {M[6]}
Description-en: Gizmo viewer
 Gizmo shows gizmos. The gizmo-nox variant needs no X.

Package: widget
Description-md5: {M[7]}
Description-en: Widget toolkit
 A toolkit of widgets.

Package: widget-legacy
Description-md5: {M[8]}
Description-en: Widget toolkit (legacy version)
 A toolkit of widgets, old version.
"""

FRENCH = f"""\
Package: frobnicate
Description-md5: {M[1]}
Description-fr: outil de frobnication pour fichiers text
 Frobnicate réécrit les fichiers text en place. Il garde une copie.
 .
 Utilisez frobnicate pour la vitesse.

Package: frob-data
Description-md5: {M[2]}
Description-fr: Données pour l'outil de frobnication
 Ce paquet contient les data de frob-data.

Package: libfrob2
Description-md5: {M[4]}
Description-fr: Bibliothèque de frobnication
 Bibliothèque partagée de frobnication.

Package: perl
Description-md5: {M[5]}
Description-fr: Practical Extraction and Report Language de Larry Wall
 Perl est un langage de programmation très performant.

Package: gizmo
Description-md5: {M[6]}
Description-fr: Visionneuse gizmo
 Gizmo montre des gizmos.

Package: widget
Description-md5: {M[7]}
Description-fr: Boîte à outils de widgets
 Une boîte à outils de widgets.

Package: widget-legacy
Description-md5: {M[8]}
Description-fr: boîte à outils de widgets
 Une boîte à outils de Widgets !

Package: orphan
Description-md5: {M[9]}
Description-fr: Paquet orphelin
"""


def write_index(folder, lz4: bool = False):
    """The three index files; the French one with a byte-order mark and CRLF line ends."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "Packages").write_bytes(PACKAGES.encode())
    english = ENGLISH.encode()
    if lz4:
        import lz4.frame

        (folder / "Translation-en.lz4").write_bytes(lz4.frame.compress(english))
    else:
        (folder / "Translation-en").write_bytes(english)
    (folder / "Translation-fr").write_bytes(b"\xef\xbb\xbf" + FRENCH.replace("\n", "\r\n").encode())
    return folder


def test_deb822_paragraphs_and_descriptions(tmp_path):
    write_index(tmp_path)
    paras = list(paragraphs(tmp_path / "Translation-fr"))
    assert len(paras) == 8 and paras[0][0] == 1 and paras[1][0] == 8  # CRLF and the BOM change nothing
    assert paras[0][1]["Package"] == "frobnicate"  # not "\ufeffPackage"
    d = description(paras[0][1]["Description-fr"])
    assert d.synopsis == "outil de frobnication pour fichiers text"
    assert d.paragraphs == ("Frobnicate réécrit les fichiers text en place. Il garde une copie.",
                            "Utilisez frobnicate pour la vitesse.")
    en = description(dict(paragraphs(tmp_path / "Translation-en"))[1]["Description-en"])
    assert en.paragraphs[1] == "Use frobnicate for speed: * fast mode * safe mode"  # pre-formatted lines joined
    pk = dict(paragraphs(tmp_path / "Packages", frozenset({"Package", "Tag"})))
    assert pk[1] == {"Package": "frobnicate", "Tag": "role::program,\n use::editing"}


def test_relations_sentences_and_names():
    assert relation_names("libfrob2 (>= 2.1), perl:any | perl-base [amd64], foo <!nocheck>") == \
        ["libfrob2", "perl", "perl-base", "foo"]
    assert first_sentence("0 A.D. (pronounced zero) is a game. It is free.") == "0 A.D. (pronounced zero) is a game."
    assert remove_names("Vim is vim-gtk3's base; see vim.", ["vim"]) == "is vim-gtk3's base; see"
    d = description("Gizmo viewer\n Gizmo shows gizmos. The gizmo-nox variant needs no X.")
    assert query_text(d, ["gizmo", "gizmo-nox"]) == "viewer shows gizmos."


@pytest.mark.parametrize("lz4", [False, True])
def test_build_writes_the_wikiclir_layout(tmp_path, lz4):
    info = build(tmp_path / "out", "fr", write_index(tmp_path / "lists", lz4=lz4), embeddings=False)
    wc = tmp_path / "out" / "wiki-clir"
    queries = (wc / "english" / "wiki_en.queries").read_text().splitlines()
    assert [q.split("\t")[0] for q in queries] == [M[k] for k in range(1, 9)]  # every English text, md5 order
    assert queries[0] == f"{M[1]}\tfrobnicate\tFrobnication tool for text files rewrites text files in place."
    assert queries[2] == f"{M[3]}\tfrob-doc\tDocumentation for the frobnication tool"  # synopsis only
    assert queries[5] == f"{M[6]}\tgizmo,gizmo-nox\tviewer shows gizmos."  # one query for the shared text
    docs = (wc / "french" / "wiki_fr.documents").read_text().splitlines()
    # widget-legacy's translation has widget's tokens: one document (id: the smaller md5); orphan has no English
    assert [d.split("\t")[0] for d in docs] == [M[k] for k in (1, 2, 4, 5, 6, 7)]
    assert docs[0].split("\t")[2] == ("outil de frobnication pour fichiers text Frobnicate réécrit les fichiers text "
                                      "en place. Il garde une copie. Utilisez frobnicate pour la vitesse.")
    assert docs[5].split("\t")[1] == "widget,widget-legacy"
    rel = (wc / "french" / "en2fr.rel").read_text().splitlines()
    assert rel == [
        f"{M[1]} {M[1]} 2", f"{M[1]} {M[2]} 1", f"{M[1]} {M[4]} 1", f"{M[1]} {M[5]} 1",  # source + depends
        f"{M[2]} {M[2]} 2", f"{M[2]} {M[1]} 1", f"{M[2]} {M[4]} 1",  # same source (frob-doc: no translation)
        f"{M[4]} {M[4]} 2", f"{M[4]} {M[1]} 1", f"{M[4]} {M[2]} 1",
        f"{M[5]} {M[5]} 2",
        f"{M[6]} {M[6]} 2", f"{M[6]} {M[7]} 1",  # gizmo-nox depends on widget
        f"{M[7]} {M[7]} 2",  # widget-legacy (same source) is this very document: left out
        f"{M[8]} {M[7]} 2",
    ]
    assert info["queries"] == 7 and info["documents"] == 6 and info["translations_merged"] == 1
    assert info["translations_without_english"] == 1 and info["sr_links_to_mr_left_out"] == 2
    assert info["sr_per_query"] == pytest.approx(8 / 7)  # SR counts 3, 2, 2, 0, 1, 0, 0 (above)
    assert info["sr_pairs_by_link"] == {"same source only": 4, "depends/recommends only": 2, "both": 2}
    # Query tokens found in the MR document, by hand per query (md5 1, 2, 4, 5, 6, 7, 8):
    # frobnication, text, text, place of 10; data, frobnication, data of 11; frobnication x2 of 6;
    # larry wall practical extraction and report language x2 of 14 (not s, is, a, ...);
    # gizmos of 3; widgets of 5 (toolkit a toolkit of widgets); widgets of 10.
    shares = [4 / 10, 3 / 11, 2 / 6, 8 / 14, 1 / 3, 1 / 5, 1 / 10]
    assert info["query_tokens_in_mr"] == pytest.approx(np.mean(shares))


def test_a_package_without_description_md5_in_packages_is_found_by_its_translation(tmp_path):
    # libfrob2's Packages paragraph gives its long description instead of Description-md5 (bookworm's
    # main has no such paragraph); Translation-en names it, so its SR links are those of the full index
    build(tmp_path / "full", "fr", write_index(tmp_path / "lists"), embeddings=False)
    lists = write_index(tmp_path / "lists2")
    text = (lists / "Packages").read_text()
    (lists / "Packages").write_text(text.replace(f"Source: frob\nDescription-md5: {M[4]}",
                                                 "Source: frob\nDescription: Frobnication library"))
    assert (lists / "Packages").read_text() != text
    build(tmp_path / "partial", "fr", lists, embeddings=False)
    rel = "wiki-clir/french/en2fr.rel"
    assert (tmp_path / "partial" / rel).read_text() == (tmp_path / "full" / rel).read_text()


def test_the_loader_reads_it_and_same_files_give_same_bytes(tmp_path):
    from clirlib.data import load_dataset

    lists = write_index(tmp_path / "lists")
    build(tmp_path / "a", "fr", lists, seed=0)
    build(tmp_path / "b", "fr", lists, seed=0)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["debian-fr.json", "polyglot/polyglot-en.pkl", "polyglot/polyglot-fr.pkl",
                                       "wiki-clir/english/wiki_en.queries", "wiki-clir/french/en2fr.rel",
                                       "wiki-clir/french/wiki_fr.documents"]
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f
    ds = load_dataset(tmp_path / "a", "fr", n_queries=7, n_nr=2)
    assert ds.info["n_queries"] == 7 and ds.info["sr_per_query"] == pytest.approx(8 / 7)
    assert ds.info["n_docs_collection"] == 6
    assert ds.info["embeddings"]["d"]["source"].endswith("polyglot-fr.pkl")
    assert ds.d_vectors.shape[1] == 64


def test_embeddings_are_monolingual_polyglot_files(tmp_path):
    from clirlib.data.polyglot import read_polyglot

    info = build(tmp_path / "out", "fr", write_index(tmp_path / "lists"))
    words, vec = read_polyglot(tmp_path / "out" / "polyglot" / "polyglot-fr.pkl")
    assert words[:4] == ["<UNK>", "<S>", "</S>", "<PAD>"] and vec.shape == (len(words), 64)
    # words occurring at least twice in the six French documents, most frequent first; "de" is
    # in five of them and twice in two (frob-data's and widget's), 7 times in all
    assert words[4] == "de" and "orphelin" not in words
    # the English file holds the eight English texts' words (its first four are always the special tokens,
    # so "not in [:4]" held whatever it held); counted by hand in ENGLISH: frobnication 5 (texts 1, 2, 3
    # and twice in 4), then a, for, of, the, toolkit 4 each (ties alphabetical); no French word
    en_words = read_polyglot(tmp_path / "out" / "polyglot" / "polyglot-en.pkl")[0]
    assert en_words[:10] == ["<UNK>", "<S>", "</S>", "<PAD>", "frobnication", "a", "for", "of", "the", "toolkit"]
    assert "de" not in en_words and "pour" not in en_words
    assert info["embeddings"]["fr"]["texts"] == 6 and info["embeddings"]["en"]["texts"] == 8


def test_missing_or_bad_files_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(MissingDataError, match=r"--from needs Packages, Translation-en and Translation-fr .*"
                                               r"`sudo apt-get update -o Acquire::Languages=en,fr,de,it` puts them in"):
        find_index_files(tmp_path, "fr")
    monkeypatch.setattr(index, "APT_LISTS", tmp_path)  # no --from: apt's lists, and the command for that language
    with pytest.raises(MissingDataError, match=r"no Translation-es index file \(get them with "
                                               r"`sudo apt-get update -o Acquire::Languages=en,fr,de,it,es`"):
        find_index_files(None, "es")
    (tmp_path / "a-file").write_text("x")  # --from a file, not a folder: said so
    with pytest.raises(MissingDataError, match="a-file: a file, not a folder"):
        find_index_files(tmp_path / "a-file", "fr")
    with pytest.raises(MissingDataError, match="nowhere: no such folder"):
        find_index_files(tmp_path / "nowhere", "fr")
    write_index(tmp_path)
    (tmp_path / "Translation-fr").write_text("Package: x\n continued\n bad\nno colon here\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr, line 4: expected 'Field: value'"):
        build(tmp_path / "out", "fr", tmp_path)
    (tmp_path / "Translation-fr").write_text(" orphan continuation\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr, line 1: continuation line"):  # the file named too
        build(tmp_path / "out", "fr", tmp_path)
    (tmp_path / "Translation-fr").write_text(f"Package: x\nDescription-md5: {M[1]}\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr, line 1: paragraph without a Description-fr field"):
        build(tmp_path / "out", "fr", tmp_path)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "clirlib", "data", "debian", *args], capture_output=True,
                          text=True, timeout=300)


def test_cli_builds_and_prints_the_statistics(tmp_path):
    lists = write_index(tmp_path / "lists")
    p = _cli("--lang", "fr", "FR", "--out", str(tmp_path / "out"), "--from", str(lists), "--no-embeddings")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("debian/fr:") == 1  # one language however it is spelt: built once
    assert "queries" in p.stdout and "query_tokens_in_mr" in p.stdout
    assert "1 translations without an English description left out" in p.stdout  # orphan's
    table = stats_table(tmp_path / "out", ["fr", "it"])
    assert list(table["lang"]) == ["fr"] and table["queries"].iloc[0] == 7
    # six French documents: no query has 40 others to draw NR from, so no "1 + SR + 40" (42.1 before)
    assert np.isnan(table["candidates_per_query"].iloc[0]) and "NaN where a query has fewer than 40" in p.stdout
    assert stats_table(tmp_path / "out", ["fr"], n_nr=2)["candidates_per_query"].iloc[0] == round(1 + 8 / 7 + 2, 1)
    p = _cli("--lang", "fr", "--out", str(tmp_path / "out"), "--from", str(tmp_path / "empty"))
    assert p.returncode == 2 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert "apt-get update" in p.stderr
    assert json.loads((tmp_path / "out" / "debian-fr.json").read_text())["queries"] == 7
    # every language's files are found before any is built (no Translation-it here), and a seed
    # that only the skipped embeddings would use is refused
    for args, words in ((["--lang", "fr", "it", "--out", str(tmp_path / "two")], "no Translation-it"),
                        (["--lang", "en", "--out", str(tmp_path / "two")], "--lang: the documents' language must differ"),
                        (["--lang", "fr", "--out", str(tmp_path / "two"), "--no-embeddings", "--seed", "3"],
                         "--seed: seeds the embeddings, which --no-embeddings skips")):
        p = _cli(*args, "--from", str(lists))
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and words in p.stderr, p.stderr
        assert not (tmp_path / "two").exists()


def test_invalid_utf8_is_named(tmp_path):
    write_index(tmp_path)
    (tmp_path / "Translation-fr").write_bytes(b"Package: x\nDescription-md5: " + b"1" * 32 + b"\nDescription-fr: \xff\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr, line 3: not valid UTF-8"):
        build(tmp_path / "out", "fr", tmp_path)


def test_a_language_missing_from_a_build_or_raw_index_files_point_to_the_builder(tmp_path):
    from clirlib.data import load_dataset

    lists = write_index(tmp_path / "lists")
    build(tmp_path / "out", "fr", lists, embeddings=False)
    # German was not built: the builder's command, not "get WikiCLIR from its authors"
    with pytest.raises(MissingDataError, match=r"missing WikiCLIR file for language 'de' \(languages present: fr\); "
                                               r"add it to this Debian build with `python -m clirlib data debian "
                                               rf"--lang de --out {tmp_path / 'out'}`"):
        load_dataset(str(tmp_path / "out"), "de")
    # apt's index files given as the data: build first
    with pytest.raises(MissingDataError, match=r"not a WikiCLIR folder but Debian index files: build the benchmark "
                                               rf"from them first, `python -m clirlib data debian --from {lists} "):
        load_dataset(str(lists), "fr")


def test_damaged_empty_or_unpaired_files_are_named_before_anything_is_written(tmp_path):
    import lz4.frame

    lists, out = write_index(tmp_path / "lists", lz4=True), tmp_path / "out"
    whole = lz4.frame.compress(ENGLISH.encode())
    for damaged in (whole[:-8], whole[:7] + b"\xff\xff\xff\x7f" + whole[11:]):  # truncated; a header byte changed
        (lists / "Translation-en.lz4").write_bytes(damaged)
        with pytest.raises(DataFormatError, match=r"Translation-en.lz4: damaged lz4 file.*replace it \(apt fetches "
                                                  r"it with `sudo apt-get update -o Acquire::Languages=en,fr,de,it`\)"):
            build(out, "fr", lists, embeddings=False)
    write_index(lists, lz4=True)
    for name, problem in (("Packages", "no package paragraph"), ("Translation-fr", "no description paragraph")):
        text = (lists / name).read_bytes()
        (lists / name).write_bytes(b"")
        with pytest.raises(DataFormatError, match=rf"{name}: {problem}: an empty or truncated file"):
            build(out, "fr", lists, embeddings=False)
        (lists / name).write_bytes(text)
    # a Translation-fr of another release: no Description-md5 of it is in Translation-en
    (lists / "Translation-fr").write_text(f"Package: xy\nDescription-md5: {'0' * 32}\nDescription-fr: Autre\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr: none of its 1 translations pairs with an English"):
        build(out, "fr", lists, embeddings=False)
    write_index(lists, lz4=True)
    packages = (lists / "Packages").read_text()
    # a bad md5 in Packages once dropped its package's SR links silently; errors name the
    # line where the paragraph starts, as every error of the Debian reader does
    (lists / "Packages").write_text("Package: bad\nDescription-md5: xyz\n\n" + packages)
    with pytest.raises(DataFormatError, match=r"Packages, line 1: Description-md5 'xyz' is not 32 hexadecimal"):
        build(out, "fr", lists, embeddings=False)
    (lists / "Packages").write_text("Package:\nSource: x\n\n" + packages)
    with pytest.raises(DataFormatError, match=r"Packages, line 1: paragraph without a Package name"):
        build(out, "fr", lists, embeddings=False)
    write_index(lists, lz4=True)
    with pytest.raises(ConfigError, match="seed: must be >= 0"):
        build(out, "fr", lists, seed=-1)
    assert not out.exists()


def test_bad_package_names_and_an_empty_source_are_named(tmp_path):
    """A name that is not Debian Policy 5.6.1's ``[a-z0-9][a-z0-9+.-]+`` (a tab in one once cut
    the built documents file into 4 columns) and an empty ``Source`` (once an IndexError) stop
    the build at their paragraph's line, before anything is written."""
    lists, out = write_index(tmp_path / "lists"), tmp_path / "out"
    # PACKAGES: frobnicate's paragraph is lines 1-10, frob-data's starts on line 12;
    # ENGLISH: frobnicate 1-8, frob-data 10-13, frob-doc 15-17, libfrob2 19-22, perl from line 24
    for name, old, new, where, problem in (
            ("Packages", "Source: frob (1.0-1)", "Source:", 12, "empty Source field"),
            ("Packages", "Source: frob (1.0-1)", "Source: Frob (1.0-1)", 12, "Source 'Frob' is not a Debian package"),
            ("Packages", "Package: frob-data", "Package: Frob-data", 12, "Package 'Frob-data' is not a Debian package"),
            ("Translation-en", "Package: perl\n", "Package: perl\tbase\n", 24,
             r"Package 'perl\\tbase' is not a Debian"),
            ("Translation-en", "Package: perl\n", "Package: perl base\n", 24, "Package 'perl base' is not a Debian"),
            ("Translation-en", "Package: perl\n", "Package: p\n", 24, "Package 'p' is not a Debian package")):
        text = {"Packages": PACKAGES, "Translation-en": ENGLISH}[name]
        assert old in text
        (lists / name).write_text(text.replace(old, new))
        with pytest.raises(DataFormatError, match=rf"{name}, line {where}: {problem}"):
            build(out, "fr", lists, embeddings=False)
        write_index(lists)
    assert not out.exists()


def test_a_plain_file_cut_short_is_named_at_its_last_line(tmp_path):
    """A plain Translation-en cut inside its last description (no line end after it) was read
    with that text shortened; the archive's files end every line, so it is refused."""
    lists = write_index(tmp_path / "lists")
    cut = ENGLISH[: ENGLISH.rindex("A toolkit of widgets, old") + 9]  # " A toolkit": line 47, the file's last
    (lists / "Translation-en").write_text(cut)
    with pytest.raises(DataFormatError, match=r"Translation-en, line 47: the file ends inside this line"):
        build(tmp_path / "out", "fr", lists, embeddings=False)
    assert not (tmp_path / "out").exists()
    (lists / "Translation-en").write_text(cut + "\n")  # a whole last line: read (the text is then what the file says)
    assert build(tmp_path / "out", "fr", lists, embeddings=False)["queries"] == 7


def _files(folder):
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_build_is_installed_whole_or_not_at_all(tmp_path, monkeypatch):
    """A failing or interrupted build leaves the folder as it was (it once left new texts beside
    the old embeddings and debian-fr.json, which the loader read as one dataset); a second
    language built into the folder keeps the first's files."""
    import importlib

    bm = importlib.import_module("clirlib.data.debian.build")  # the module, not the function of that name

    lists, out = write_index(tmp_path / "lists"), tmp_path / "out"
    build(out, "fr", lists)
    before = _files(out)
    assert len(before) == 6  # debian-fr.json, 2 polyglot files, queries, documents, relevance file
    # the next release, interrupted while its files are written (the second polyglot file)
    (lists / "Translation-fr").write_text(FRENCH.replace("Visionneuse gizmo", "Afficheur de gizmos"))
    real, calls = bm.save_polyglot, []

    def interrupted(*args, **kwargs):
        calls.append(args[0])
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(*args, **kwargs)

    monkeypatch.setattr(bm, "save_polyglot", interrupted)
    with pytest.raises(KeyboardInterrupt):
        build(out, "fr", lists)
    monkeypatch.setattr(bm, "save_polyglot", real)
    assert _files(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["lists", "out"]  # no temporary left
    # too few French words for embeddings: the input file is named, nothing is written
    (lists / "Translation-fr").write_text(f"Package: perl\nDescription-md5: {M[5]}\nDescription-fr: Langage Perl\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr: too few words to train fr embeddings \(0 occurring"):
        build(out, "fr", lists)
    assert _files(out) == before
    # German (the French texts as Translation-de) built into the same folder: French's files stay
    write_index(lists)
    (lists / "Translation-de").write_text(FRENCH.replace("Description-fr:", "Description-de:"))
    (lists / "Translation-fr").unlink()
    build(out, "de", lists)
    after = _files(out)
    assert {k: v for k, v in after.items() if k in before} == before  # the same bytes (English ones too: same inputs)
    assert sorted(set(after) - set(before)) == ["debian-de.json", "polyglot/polyglot-de.pkl",
                                                "wiki-clir/german/en2de.rel", "wiki-clir/german/wiki_de.documents"]
    # German rebuilt without embeddings drops its old ones (other texts'), keeps the others
    build(out, "de", lists, embeddings=False)
    assert "polyglot/polyglot-de.pkl" not in _files(out) and "polyglot/polyglot-fr.pkl" in _files(out)
    (out / "notes.txt").write_text("mine")  # a folder holding other things is not replaced
    with pytest.raises(FileExistsError, match="holds notes.txt besides Debian builds"):
        build(out, "de", lists)
    # the working folder (or one above it) cannot be renamed away: refused before any work, by name
    (out / "notes.txt").unlink()
    monkeypatch.chdir(out / "wiki-clir")
    for where in (".", ".."):
        with pytest.raises(FileExistsError, match="the working folder or a folder above it"):
            build(where, "de", lists)
    # a mount point neither (rename(2) refuses it: EBUSY); os.path.ismount stubbed to say so
    monkeypatch.setattr(bm.os.path, "ismount", lambda p: bm.os.path.realpath(p) == str(out.resolve()))
    with pytest.raises(FileExistsError, match="a mount point"):
        build(out, "de", lists)


def test_a_lone_carriage_return_is_text_and_line_numbers_stay_the_files(tmp_path):
    """Only "\\n" ends a line (CRLF's "\\r" is dropped): a lone "\\r" inside a value is text, so a
    bad line after it is named by its own number (it read as two lines, and the error named
    line 4 of a 3-line file)."""
    f = tmp_path / "Translation-fr"
    f.write_bytes(b"Package: a\r\nDescription-md5: 0123\r\nDescription-fr: un\rdeux\r\n\r\nbad line\r\n")
    with pytest.raises(DataFormatError, match=r"Translation-fr, line 5: expected 'Field: value'"):
        list(paragraphs(f))
    f.write_bytes(b"Package: a\r\nDescription-md5: 0123\r\nDescription-fr: un\rdeux\r\n")
    paras = list(paragraphs(f))
    assert paras == [(1, {"Package": "a", "Description-md5": "0123", "Description-fr": "un\rdeux"})]


def test_deb822_details_a_mutation_review_found_unpinned(tmp_path):
    f = tmp_path / "x"
    f.write_text("# a comment line\nPackage: ab\n")
    assert list(paragraphs(f)) == [(2, {"Package": "ab"})]  # comment lines are skipped, not refused
    f.write_text("Tag: x\nPackage: ab\n")
    assert list(paragraphs(f, frozenset({"Package"}))) == [(1, {"Package": "ab"})]  # starts at its first field, kept or not
    f.write_text("Package: ab\nPackage: cd\n")
    with pytest.raises(DataFormatError, match=r"x, line 2: field 'Package' given twice in one paragraph"):
        list(paragraphs(f))


def test_index_files_that_contradict_themselves_are_refused(tmp_path):
    lists = write_index(tmp_path / "lists")
    # one Description-md5 given two texts in Translation-en: ENGLISH's 47 lines, a blank line 48, and the
    # second text's paragraph from line 49 (where the error points, as every error of the Debian reader)
    english = (lists / "Translation-en").read_text()
    (lists / "Translation-en").write_text(english + f"\nPackage: frob-extra\nDescription-md5: {M[1]}\n"
                                          "Description-en: Another text\n")
    with pytest.raises(DataFormatError, match=f"Translation-en, line 49: Description-md5 {M[1]} given again with "
                                              "another text"):
        build(tmp_path / "out", "fr", lists, embeddings=False)
    (lists / "Translation-en").write_text(english)
    # two Translation-fr files: which area is meant is not guessed
    (lists / "x_i18n_Translation-fr").write_bytes((lists / "Translation-fr").read_bytes())
    with pytest.raises(DataFormatError, match="2 Translation-fr files"):
        find_index_files(lists, "fr")


def test_a_package_listed_twice_keeps_its_first_paragraph(tmp_path):
    lists = write_index(tmp_path / "lists")
    (lists / "Packages").write_text(PACKAGES + f"\nPackage: frobnicate\nSource: other\nDescription-md5: {M[1]}\n")
    from clirlib.data.debian.build import _packages

    assert _packages(lists / "Packages")["frobnicate"]["Source"] == "frob"  # a later version is not read


def test_queries_sharing_text_are_counted_by_hand(tmp_path):
    lists = write_index(tmp_path / "lists")
    assert build(tmp_path / "a", "fr", lists, embeddings=False)["queries_sharing_text_with_another"] == 0
    # widget (md5 7) and widget-legacy (md5 8) given texts that are the same once each query's own
    # package name is removed: "toolkit A toolkit of widgets." twice, so two queries share a text
    english = (lists / "Translation-en").read_text()
    english = english.replace("Description-en: Widget toolkit (legacy version)\n A toolkit of widgets, old version.",
                              "Description-en: Widget-legacy toolkit\n A toolkit of widgets.")
    (lists / "Translation-en").write_text(english)
    assert build(tmp_path / "b", "fr", lists, embeddings=False)["queries_sharing_text_with_another"] == 2


def test_a_querys_names_come_from_packages_too_and_a_package_takes_its_first_md5(tmp_path):
    lists = write_index(tmp_path / "lists")
    # frob-data-extra shares frob-data's description in Packages but has no Translation-en paragraph:
    # it is one of that query's packages (its title lists it, its name is removed from the text)
    (lists / "Packages").write_text(PACKAGES + f"\nPackage: frob-data-extra\nSource: frob\nDescription-md5: {M[2]}\n")
    build(tmp_path / "a", "fr", lists, embeddings=False)
    queries = (tmp_path / "a" / "wiki-clir" / "english" / "wiki_en.queries").read_text().splitlines()
    assert queries[1].split("\t")[1] == "frob-data,frob-data-extra"
    # libfrob2 without Description-md5 in Packages, named by two Translation-en paragraphs (md5 4 and
    # 9, whose French text, "orphan"'s, now has an English one): it takes the first md5 in order, 4,
    # so frobnicate's SR link through Depends goes to document 4, not 9
    lists = write_index(tmp_path / "lists2")
    (lists / "Packages").write_text(PACKAGES.replace(f"Source: frob\nDescription-md5: {M[4]}", "Source: frob"))
    (lists / "Translation-en").write_text(ENGLISH + f"\nPackage: libfrob2\nDescription-md5: {M[9]}\n"
                                          "Description-en: Orphan package\n")
    build(tmp_path / "b", "fr", lists, embeddings=False)
    rel = (tmp_path / "b" / "wiki-clir" / "french" / "en2fr.rel").read_text().splitlines()
    assert f"{M[1]} {M[4]} 1" in rel and f"{M[1]} {M[9]} 1" not in rel


def test_an_index_file_that_is_no_file_says_what_it_is(tmp_path):
    """A FIFO or a broken link read as "file not found" (the shared check_regular_file)."""
    import os

    fifo, link = tmp_path / "Packages", tmp_path / "Translation-fr"
    os.mkfifo(fifo)
    link.symlink_to(tmp_path / "gone")
    for path, words in ((fifo, r"not a regular file \(a FIFO"), (link, "a link that leads nowhere or loops"),
                        (tmp_path, "a folder, not a file")):
        with pytest.raises(DataFormatError, match=f"{path}: {words}"):
            list(paragraphs(path))
    with pytest.raises(MissingDataError, match="file not found"):
        list(paragraphs(tmp_path / "absent"))


def test_field_names_are_case_insensitive(tmp_path):
    """deb822 field names are case-insensitive (Debian Policy 5.1): "package: gamma2" after
    "Package: gamma" is the field given twice (it was left out without a word), and a field
    spelt in another case is read as the field."""
    f = tmp_path / "Packages"
    f.write_text("Package: gamma\nDescription-md5: 0123\npackage: gamma2\n")
    with pytest.raises(DataFormatError, match=r"Packages, line 3: field 'package' given twice in one paragraph "
                                              r"\(as 'Package' on line 1: field names are case-insensitive"):
        list(paragraphs(f, frozenset({"Package"})))
    lists = write_index(tmp_path / "lists")  # the builder refuses it before writing anything
    (lists / "Packages").write_bytes(f.read_bytes())
    with pytest.raises(DataFormatError, match=r"Packages, line 3: field 'package' given twice"):
        build(tmp_path / "out", "fr", lists)
    assert not (tmp_path / "out").exists()
    f.write_text("PACKAGE: gamma\ndescription-MD5: 0123\n continued\nTag: x\n")
    assert list(paragraphs(f, frozenset({"Package", "Description-md5"}))) == \
        [(1, {"Package": "gamma", "Description-md5": "0123\n continued"})]
    assert list(paragraphs(f)) == [(1, {"PACKAGE": "gamma", "description-MD5": "0123\n continued", "Tag": "x"})]

