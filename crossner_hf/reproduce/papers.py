"""The papers' tables as package data (``paper_tables.json``): loading, numbers and their rounding.

Every table of the three papers is transcribed once, each row with the ``FILE:line`` of the plain
text it was read from (``../shared/papers``), its cells as the strings the paper prints. Keeping
the strings keeps the paper's digits, and the digits bound its rounding: ``44.6`` stands for
anything in [44.55, 44.65), ``67.55`` for [67.545, 67.555). :func:`rounding_bound` turns that
into the check a printed average must pass (``tests/test_paper_tables.py``): a strict
``round(mean(cells), 2) == average`` fails on rows such as CrossNER 002:499 and 002:510 and
NER-BERT 003:99, whose averages were taken over unrounded cells.

Example:
    >>> table = paper_table("crossner/table2")
    >>> row = table_row(table, "pretrain-finetune / DAPT span / integrated")
    >>> number(row["cells"]["politics"]), row["line"]
    (72.05, '002:483')
    >>> round(rounding_bound(["71.90", "68.04", "71.98", "64.23", "61.63"], "67.55"), 4)
    0.01
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

SCALE = {"K": 1e3, "M": 1e6, "GB": 1.0}


@lru_cache(maxsize=1)
def paper_data() -> dict[str, Any]:
    """The whole transcription: ``papers``, ``tables``, ``figures``, ``claims``."""
    return json.loads(resources.files(__package__).joinpath("paper_tables.json").read_text(encoding="utf-8"))


def paper_table(key: str) -> dict[str, Any]:
    """One table, e.g. ``crossner/table2``; a ``KeyError`` naming the transcribed ones otherwise."""
    tables = paper_data()["tables"]
    if key not in tables:
        raise KeyError(f"no transcribed table {key!r}; the tables are {', '.join(tables)}.")
    return tables[key]


def table_row(table: dict[str, Any], label: str) -> dict[str, Any]:
    """The row of ``table`` named ``label``."""
    for row in table["rows"]:
        if row["row"] == label:
            return row
    raise KeyError(f"{table['lines']}: no row {label!r}.")


def number(text: str | None) -> float | None:
    """A printed cell as a number: ``'1,501'`` -> 1501, ``'+4.10'`` -> 4.1, ``'1.48M'`` -> 1.48e6, ``None`` stays."""
    if text is None:
        return None
    text = text.replace(",", "")
    for suffix, factor in SCALE.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def half_unit(text: str) -> float:
    """Half the last printed digit's unit (``'44.6'`` -> 0.05, ``'177M'`` -> 0.5e6): how far rounding may have moved it."""
    text = text.replace(",", "").lstrip("+-")
    factor = 1.0
    for suffix, scale in SCALE.items():
        if text.endswith(suffix):
            text, factor = text[: -len(suffix)], scale
            break
    decimals = len(text.split(".")[1]) if "." in text else 0
    return 0.5 * 10 ** -decimals * factor


def rounding_bound(cells: Sequence[str], average: str) -> float:
    """The most a printed ``average`` may differ from the mean of the printed ``cells`` when both were
    rounded from the same unrounded numbers: the mean of the cells' half-units plus the average's."""
    return sum(half_unit(c) for c in cells) / len(cells) + half_unit(average)


def source_text(key: str) -> str:
    """'<paper title>, <table lines>' for a table's captions and Markdown."""
    table = paper_table(key)
    return f"{paper_data()['papers'][table['paper']]['title']}, {key.split('/')[1]} ({table['lines']})"
