"""Reading and validating CoNLL-style NER files (``token<TAB>tag`` per line), and a CoNLL folder: its three files
(:data:`SPLIT_FILES`), the check that they are there and its tag list (:func:`conll_folder_labels`).

Every malformed line raises :class:`ConllFormatError` naming the file, the 1-based line,
what is wrong and what is allowed; nothing is dropped silently. Accepted on purpose:
CRLF line ends, a UTF-8 byte-order mark, a missing final blank line (the CoNLL-2003
files end that way and the original reader lost their last sentence), runs of blank
lines, and ``-DOCSTART-`` document markers (skipped, they are not sentences).

Example:
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "train.txt"
    >>> _ = p.write_text("Obama\\tB-politician\\nspoke\\tO\\n")
    >>> read_conll(p, ["O", "B-politician", "I-politician"])
    [{'tokens': ['Obama', 'spoke'], 'ner_tags': ['B-politician', 'O']}]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from crossner_hf.data.labels import LABELS_FILE, continues, orphan_message, read_label_file, tag_type

logger = logging.getLogger(__name__)

DOCSTART = "-DOCSTART-"


class ConllFormatError(ValueError):
    """A CoNLL file is malformed; ``path`` and ``line`` (1-based) say where."""

    def __init__(self, path: str | Path, line: int, message: str):
        self.path = str(path)
        self.line = line
        self.reason = message
        super().__init__(f"{self.path}, line {line}: {message}")


EXCERPT = 60
"""Characters of a line, token or tag an error quotes: a 5 MB line without a tab is named, not pasted."""


def excerpt(value: str, limit: int = EXCERPT) -> str:
    """``repr(value)``, cut to its first ``limit`` characters (with its length) when longer."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value):,} characters)"


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConllFormatError(
            path,
            line,
            f"bytes {data[err.start:err.end]!r} are not valid UTF-8 ({err.reason}); "
            "re-encode the file as UTF-8.",
        ) from None
    return text.removeprefix("\ufeff")


def read_conll(
    path: str | Path, labels: Sequence[str] | None, strict: bool = True, *, warn_repairs: bool = True,
    problems: list[str] | None = None,
) -> list[dict[str, list[str]]]:
    """Read a CoNLL NER file into ``[{"tokens": [...], "ner_tags": [...]}, ...]``.

    The file parser :func:`crossner_hf.data.target.load_target` (the one labeled-data loader) reads CoNLL files
    with; load a dataset with ``load_target``, not with this.

    Args:
        path: the file, one ``token<TAB>tag`` per line, a blank line between sentences.
        labels: the allowed tags (a config's label list, e.g. ``LABELS["politics"]``); ``None``
            allows any ``O``, ``B-<type>`` or ``I-<type>`` (to find a new folder's label list).
        strict: if True, an ``I-x`` tag that does not continue an entity of type ``x``
            raises; if False it is repaired to ``B-x`` and the number of repairs is
            logged as a warning.
        problems: instead of raising at the first malformed line, append each one's message
            (``file, line N: ...``) here and skip the line (the data check lists them all).

    Raises:
        ConllFormatError: on a missing tab or extra columns, an empty token, a tag not
            in ``labels``, an orphan ``I-`` tag (strict mode) or undecodable bytes.
        FileNotFoundError: if ``path`` does not exist.
    """
    path = Path(path)
    already = len(problems) if problems is not None else 0

    def fail(lineno: int, message: str) -> None:
        error = ConllFormatError(path, lineno, message)
        if problems is None:
            raise error
        problems.append(str(error))

    try:
        text = _decode(path, path.read_bytes())
    except ConllFormatError as error:
        if problems is None:
            raise
        problems.append(str(error))
        return []
    allowed = set(labels) if labels is not None else None
    sentences: list[dict[str, list[str]]] = []
    tokens: list[str] = []
    tags: list[str] = []
    repaired = 0

    def close_sentence() -> None:
        nonlocal tokens, tags
        if tokens:
            sentences.append({"tokens": tokens, "ner_tags": tags})
            tokens, tags = [], []

    # split("\n") rather than splitlines(): tokens may legitimately contain \x0b, \x1c,
    # \u2028 and other characters that splitlines() would treat as line breaks.
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            close_sentence()
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            what = "no tab" if len(parts) == 1 else f"{len(parts)} tab-separated columns"
            fail(
                lineno,
                f"expected exactly 2 columns 'token<TAB>tag' but found {what} in {excerpt(line)}.",
            )
            continue
        token, tag = parts[0], parts[1].strip()
        if token == DOCSTART:
            close_sentence()
            continue
        if token.strip() == "":
            fail(
                lineno, f"empty token (tag {excerpt(tag)}); every line needs a non-blank token."
            )
            continue
        if allowed is None:
            if tag != "O" and (tag[:2] not in ("B-", "I-") or len(tag) < 3):
                fail(
                    lineno, f"tag {excerpt(tag)} (token {excerpt(token)}) is not BIO: use O, B-<type> or I-<type>.")
                continue
        elif tag not in allowed:
            fail(
                lineno,
                f"tag {excerpt(tag)} (token {excerpt(token)}) is not in this config's label list; "
                f"allowed tags: {', '.join(labels)}.",
            )
            continue
        if tag.startswith("I-"):
            previous = tags[-1] if tags else "O"
            if not continues(previous, tag):
                etype = tag_type(tag)
                if strict:
                    fail(lineno, orphan_message(tag, previous, token[:EXCERPT]))
                tag = "B-" + etype
                if allowed is not None and tag not in allowed:
                    fail(lineno, f"cannot repair orphan {parts[1]!r}: {tag!r} is not in the label list.")
                    continue
                repaired += 1
        tokens.append(token)
        tags.append(tag)
    close_sentence()
    if not sentences and (problems is None or len(problems) == already):  # a bad line already says why
        fail(1, "no sentences: the file is empty or holds only blank or -DOCSTART- lines; pass a CoNLL file of "
                "word<TAB>tag lines")
    if repaired and warn_repairs:
        logger.warning(
            "%s: repaired %d orphan I- tag(s) to B- (strict=False).", path, repaired
        )
    return sentences


def write_conll(
    target: str | Path | TextIO,
    sentences: Sequence[Mapping[str, Sequence[str]]],
    columns: Sequence[str] = ("tokens", "ner_tags"),
) -> None:
    """Write sentences as tab-separated ``columns`` (a blank line after each sentence).

    The default two columns are the format :func:`read_conll` reads; ``crossner-hf
    predict --conll`` writes ``("tokens", "gold", "pred")``. ``target`` is a path or an open
    text stream.
    """
    lines: list[str] = []
    for sentence in sentences:
        lines.extend("\t".join(row) for row in zip(*(sentence[c] for c in columns)))
        lines.append("")
    text = "\n".join(lines) + ("\n" if lines else "")
    if isinstance(target, (str, Path)):
        Path(target).write_text(text, encoding="utf-8")
    else:
        target.write(text)


# ----------------------------------------------------------------------------- a CoNLL folder

SPLIT_FILES: dict[str, str] = {"train": "train.txt", "validation": "dev.txt", "test": "test.txt"}
"""The files of a CoNLL folder, one a split (a CrossNER config's folder is one too)."""


def check_conll_folder(folder: str | Path, flag: str = "--dataset_dir") -> Path:
    """``folder`` if it holds ``train.txt``, ``dev.txt`` and ``test.txt``; a ``ValueError`` saying what to fix else."""
    path = Path(folder)
    missing = [f for f in SPLIT_FILES.values() if not (path / f).is_file()]
    if missing:
        raise ValueError(f"{flag} {folder}: no {', '.join(missing)} there; pass a folder holding train.txt, dev.txt "
                         "and test.txt in CoNLL format (word<TAB>tag lines, a blank line between sentences).")
    return path


def conll_folder_labels(folder: str | Path) -> list[str]:
    """The tag list of a user's CoNLL folder: its ``labels.json`` if there is one, else ``O`` and then
    ``B-``/``I-`` of each entity type in the order the types first appear in train, dev, test.

    Deterministic, so every run on the folder (and every seed) builds the same head.
    """
    path = check_conll_folder(folder)
    given = path / LABELS_FILE
    if given.is_file():
        return read_label_file(given)
    types: dict[str, None] = {}
    for file in SPLIT_FILES.values():
        for sentence in read_conll(path / file, None, strict=False, warn_repairs=False):  # types only
            for tag in sentence["ner_tags"]:
                if tag != "O":
                    types.setdefault(tag[2:], None)
    return ["O", *(f"{prefix}-{kind}" for kind in types for prefix in ("B", "I"))]


def is_conll_folder(source: str | Path) -> bool:
    """True when ``source`` is a folder holding any of ``train.txt``, ``dev.txt``, ``test.txt`` (then all three
    are required, see :func:`check_conll_folder`)."""
    path = Path(source)
    return path.is_dir() and any((path / f).is_file() for f in SPLIT_FILES.values())
