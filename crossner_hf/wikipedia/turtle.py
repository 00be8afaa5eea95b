"""Reading DBpedia's instance-type files: rdf:type triples from N-Triples or Turtle, streamed.

:func:`iter_type_triples` yields ``(subject IRI, object IRI)`` of every rdf:type statement of
one file (plain, ``.bz2`` or ``.gz``). One N-Triples statement a line (the DBpedia dumps) takes a
fast path of string splits; anything else goes through a small Turtle tokenizer (``@prefix``,
``@base``, prefixed names, ``a``, ``;`` and ``,`` lists, statements over several lines). A line
that cannot be parsed raises a ``ValueError`` naming the file and line, or is counted and
skipped with ``skip_bad_lines``.
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any
from urllib.parse import urljoin

RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
_RDF_TYPE_REF = f"<{RDF_TYPE}>"
_UCHAR = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
_PN_ESCAPE = re.compile(r"\\(.)")
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<iri><[^<>\s]*>)
    | (?P<lit>"(?:[^"\\]|\\.)*"(?:@[A-Za-z][\w-]*|\^\^(?:<[^<>\s]*>|(?:[A-Za-z][\w.-]*)?:[\w%.:-]*))?)
    | (?P<bnode>_:[\w-]+(?:\.[\w-]+)*)
    | (?P<pname>(?:[A-Za-z][\w.-]*)?:(?:[\w%:-]|\\.)*(?:\.(?:[\w%:-]|\\.)+)*)
    | (?P<kw>@prefix|@base|a(?![\w:]))
    | (?P<punct>[.;,])
    | (?P<comment>\#.*)
    )""",
    re.X,
)


def _open(path: Path) -> tuple[IO[bytes], IO[str]]:
    """The raw file (whose position drives the progress bar) and its decoded text."""
    raw, name = open(path, "rb"), path.name.lower()
    data = bz2.BZ2File(raw) if name.endswith(".bz2") else gzip.GzipFile(fileobj=raw) if name.endswith(".gz") else raw
    return raw, io.TextIOWrapper(data, encoding="utf-8")


def _unescape_iri(iri: str) -> str:
    # N-Triples escapes non-ASCII IRI characters as \uXXXX; titles need the characters.
    return _UCHAR.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), iri)


class _Turtle:
    """One Turtle file's prefixes and base, and the tokens of a statement spanning lines."""

    def __init__(self, path: Path) -> None:
        self.path, self.base = path, ""
        self.prefixes: dict[str, str] = {}
        self.pending: list[tuple[str, str]] = []

    def error(self, lineno: int, what: str) -> ValueError:
        return ValueError(f"{self.path}:{lineno}: {what}; fix the file or pass skip_bad_lines=True")

    def _term(self, kind: str, text: str, lineno: int) -> str | None:
        if kind == "iri":
            iri = _unescape_iri(text[1:-1]) if "\\" in text else text[1:-1]
            return urljoin(self.base, iri) if self.base and ":" not in iri else iri
        if kind == "pname":
            prefix, local = text.split(":", 1)
            if prefix not in self.prefixes:
                raise self.error(lineno, f"undeclared prefix {prefix}: (add '@prefix {prefix}: <...> .')")
            return self.prefixes[prefix] + _PN_ESCAPE.sub(r"\1", local)
        return RDF_TYPE if text == "a" else None  # blank nodes and literals are not pages

    def parse(self, line: str, lineno: int) -> list[tuple[str | None, str | None]]:
        """(subject, object) of the rdf:type triples of each statement ending on this line."""
        found: list[tuple[str | None, str | None]] = []
        pos = 0
        while (m := _TOKEN.match(line, pos)) and m.end() > pos:
            pos, kind = m.end(), m.lastgroup or ""
            if kind == "comment":
                return found
            self.pending.append((kind, m.group(kind)))
            if self.pending[-1] == ("punct", "."):
                statement, self.pending = self.pending, []
                found += self._statement(statement, lineno)
        if line[pos:].strip():
            raise self.error(lineno, f"cannot parse {line[pos:].strip()[:80]!r}")
        return found

    def _statement(self, toks: list[tuple[str, str]], lineno: int) -> list[tuple[str | None, str | None]]:
        kinds, texts = [k for k, _ in toks], [t for _, t in toks]
        if texts[0] in ("@prefix", "@base"):
            if texts[0] == "@prefix" and kinds[1:] == ["pname", "iri", "punct"] and texts[1].endswith(":"):
                self.prefixes[texts[1][:-1]] = self._term("iri", texts[2], lineno) or ""
            elif texts[0] == "@base" and kinds[1:] == ["iri", "punct"]:
                self.base = self._term("iri", texts[1], lineno) or ""
            else:
                raise self.error(lineno, f"malformed directive {' '.join(texts)!r}")
            return []
        if len(toks) < 4 or kinds[0] not in ("iri", "pname", "bnode"):
            raise self.error(lineno, f"expected 'subject predicate object .', got {' '.join(texts)[:80]!r}")
        # subject predicate object (, object)* (; predicate object (, object)*)* ;? .
        subject, found, i, last = self._term(kinds[0], texts[0], lineno), [], 1, len(toks) - 1
        while i < last:
            if kinds[i] not in ("iri", "pname") and texts[i] != "a":
                raise self.error(lineno, f"expected a predicate, got {texts[i]!r}")
            predicate = self._term(kinds[i], texts[i], lineno)
            while True:
                i += 1
                if i >= last or kinds[i] not in ("iri", "pname", "bnode", "lit"):
                    raise self.error(lineno, f"expected an object after {texts[i - 1]!r}")
                if predicate == RDF_TYPE:
                    found.append((subject, self._term(kinds[i], texts[i], lineno)))
                i += 1
                if texts[i] != ",":
                    break
            if kinds[i] != "punct":
                raise self.error(lineno, f"expected ',', ';' or '.', got {texts[i]!r}")
            while texts[i] == ";" and i < last:
                i += 1
        return found


def iter_type_triples(
    path: str | os.PathLike, *, skip_bad_lines: bool = False, counts: Counter | None = None, _bar: Any = None
) -> Iterator[tuple[str, str]]:
    """Stream ``(subject IRI, object IRI)`` of the rdf:type triples of one N-Triples/Turtle file.

    ``counts`` (if given) receives ``lines``, ``triples`` (rdf:type ones) and ``bad_lines``. A line
    that cannot be parsed raises ValueError naming file and line, unless ``skip_bad_lines``.
    """
    path = Path(path)
    counts = Counter() if counts is None else counts
    state = _Turtle(path)
    raw, text = _open(path)
    lineno, last_pos = 0, 0
    with raw, text:
        for lineno, line in enumerate(text, 1):
            if _bar is not None and not lineno & 0xFFFF:
                pos = raw.tell()
                _bar.update(pos - last_pos)
                last_pos = pos
            parts = line.split()
            # Fast path: one N-Triples statement per line, as in the DBpedia dumps.
            if (len(parts) == 4 and parts[3] == "." and not state.pending
                    and parts[0][0] == parts[1][0] == parts[2][0] == "<"
                    and parts[0][-1] == parts[1][-1] == parts[2][-1] == ">"):
                if parts[1] == _RDF_TYPE_REF:
                    counts["triples"] += 1
                    s, o = parts[0][1:-1], parts[2][1:-1]
                    yield (_unescape_iri(s), _unescape_iri(o)) if "\\" in line else (s, o)
                continue
            try:
                found = state.parse(line, lineno) if parts else []
            except ValueError:
                if not skip_bad_lines:
                    raise
                counts["bad_lines"] += 1
                state.pending = []
                continue
            for s, o in found:
                counts["triples"] += 1
                if s is not None and o is not None:
                    yield s, o
        counts["lines"] += lineno
        if _bar is not None:
            _bar.update(raw.tell() - last_pos)
    if state.pending:
        if not skip_bad_lines:
            raise state.error(lineno, "the file ends inside a statement (missing ' .'?)")
        counts["bad_lines"] += 1
