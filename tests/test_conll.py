"""read_conll: every malformed case raises with file and line; nothing is dropped."""

from __future__ import annotations

import logging

import pytest

from crossner_hf.data.conll import ConllFormatError, read_conll, write_conll
from crossner_hf.data.labels import LABELS

POL = LABELS["politics"]


def _write(tmp_path, content: str | bytes, name: str = "f.txt"):
    p = tmp_path / name
    if isinstance(content, str):
        content = content.encode("utf-8")
    p.write_bytes(content)
    return p


def test_reads_sentences_and_keeps_last_without_blank_line(tmp_path):
    p = _write(tmp_path, "Obama\tB-politician\nspoke\tO\n\nSenate\tB-organisation\nvoted\tO")
    out = read_conll(p, POL)
    assert out == [
        {"tokens": ["Obama", "spoke"], "ner_tags": ["B-politician", "O"]},
        {"tokens": ["Senate", "voted"], "ner_tags": ["B-organisation", "O"]},
    ]


def test_crlf_bom_and_blank_runs_accepted(tmp_path):
    p = _write(tmp_path, b"\xef\xbb\xbfObama\tB-politician\r\nspoke\tO\r\n\r\n\r\n\r\nHe\tO\r\n")
    out = read_conll(p, POL)
    assert [s["tokens"] for s in out] == [["Obama", "spoke"], ["He"]]
    assert out[0]["ner_tags"] == ["B-politician", "O"]


def test_docstart_is_a_boundary_not_a_token(tmp_path):
    p = _write(tmp_path, "-DOCSTART-\tO\n\nA\tO\n-DOCSTART-\tO\nB\tO\n")
    assert [s["tokens"] for s in read_conll(p, POL)] == [["A"], ["B"]]


def test_unusual_characters_inside_tokens_are_kept(tmp_path):
    # \x0b and \u2028 are line breaks for str.splitlines(); they must stay inside tokens
    p = _write(tmp_path, "a\x0bb\tO\nc\u2028d\tO\n")
    assert read_conll(p, POL)[0]["tokens"] == ["a\x0bb", "c\u2028d"]


@pytest.mark.parametrize(
    "content, line, fragment",
    [
        ("Obama B-politician\n", 1, "no tab"),
        ("Obama\tB-politician\tX\n", 1, "3 tab-separated columns"),
        ("ok\tO\n\tO\n", 2, "empty token"),
        ("ok\tO\n  \tO\n", 2, "empty token"),
        ("ok\tO\nParis\tB-city\n", 2, "allowed tags: O, B-country"),
        ("ok\tO\nParis\tB-politician extra\n", 2, "not in this config's label list"),
        ("the\tO\nSenate\tI-organisation\n", 2, "does not continue"),
        ("Obama\tB-politician\nSenate\tI-organisation\n", 2, "previous tag 'B-politician'"),
        ("a\tO\n\nSenate\tI-organisation\n", 3, "does not continue"),
    ],
)
def test_malformed_lines_raise_with_path_and_line(tmp_path, content, line, fragment):
    p = _write(tmp_path, content)
    with pytest.raises(ConllFormatError) as info:
        read_conll(p, POL)
    assert info.value.line == line
    assert info.value.path == str(p)
    assert fragment in str(info.value)
    assert str(p) in str(info.value) and f"line {line}" in str(info.value)


def test_undecodable_bytes_name_the_line(tmp_path):
    p = _write(tmp_path, b"ok\tO\nfine\tO\n\nbad\xff\xfe\tO\n")
    with pytest.raises(ConllFormatError) as info:
        read_conll(p, POL)
    assert info.value.line == 4
    assert "UTF-8" in str(info.value)


def test_non_strict_repairs_orphan_inside_tags_and_reports(tmp_path, caplog):
    p = _write(tmp_path, "the\tO\nSenate\tI-organisation\nHouse\tI-organisation\n\nX\tI-person\n")
    with caplog.at_level(logging.WARNING, logger="crossner_hf.data.conll"):
        out = read_conll(p, POL, strict=False)
    assert out[0]["ner_tags"] == ["O", "B-organisation", "I-organisation"]
    assert out[1]["ner_tags"] == ["B-person"]
    assert "repaired 2 orphan" in caplog.text


def test_type_change_inside_run_is_orphan(tmp_path):
    p = _write(tmp_path, "A\tB-person\nB\tI-location\n")
    assert read_conll(p, POL, strict=False)[0]["ner_tags"] == ["B-person", "B-location"]


def test_write_then_read_round_trip(tmp_path):
    sents = [{"tokens": ["A", "b"], "ner_tags": ["B-person", "I-person"]}, {"tokens": ["c"], "ner_tags": ["O"]}]
    write_conll(tmp_path / "x.txt", sents)
    assert read_conll(tmp_path / "x.txt", POL) == sents


def test_all_shared_files_read_strictly_without_loss(crossner_data_dir):
    """Every non-blank line of the raw files becomes exactly one token."""
    for config, labels in LABELS.items():
        for name in ("train.txt", "dev.txt", "test.txt"):
            path = crossner_data_dir / config / name
            lines = [l for l in path.read_text(encoding="utf-8").split("\n") if l.strip()]
            sents = read_conll(path, labels)
            assert sum(len(s["tokens"]) for s in sents) == len(lines), (config, name)
