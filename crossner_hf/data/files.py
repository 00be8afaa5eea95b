"""A local folder of JSON Lines / CSV / Parquet files as splits, each malformed line named ``file:line``; and any
source's splits (:func:`load_splits`: such a folder, another folder ``load_dataset`` opens, a Hub id).

``datasets.load_dataset`` reads such a folder, but a truncated JSON line or an unbalanced CSV quote ends there in a
``DatasetGenerationError`` traceback with the file and row only in a log line. :func:`read_folder` first finds
which files hold which split (``datasets``' own patterns: ``train.jsonl``, ``dev.csv``, ``test-00001.parquet``,
...), reads each file's structure itself, and names every problem as an editor wants it:

- JSON Lines (``.jsonl``, ``.json``): a line that is not one complete JSON object,
  ``js/train.jsonl:2: not a complete JSON object (...)``; a ``.json`` file may also hold one JSON array of rows;
- CSV (``.csv``): a quote opened and never closed (``data/train.csv:3``, the line where the row starts), a row
  with more or fewer cells than the header, bytes that are not UTF-8;
- Parquet (``.parquet``): a file pyarrow cannot open;
- any of them: a file without a row (``js/train.jsonl: no rows (...)``).

Each split also gets its row places (:class:`Places`): row ``i`` is ``js/train.jsonl:2`` (1-based line; blank
lines skipped as ``datasets`` skips them; a CSV row's first line, the header being line 1) or, where a file has no
lines (Parquet, Arrow, a JSON array), ``data/train.parquet row 2``.

Example:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "train.jsonl").write_text('{"tokens": ["Ada"], "ner_tags": ["B-person"]}\\n{"tokens": ["Ad')
    >>> rows, problems = scan_file(folder / "train.jsonl", "js/train.jsonl")
    >>> problems[0][:44]
    'js/train.jsonl:2: not a complete JSON object'
"""

from __future__ import annotations

import bisect
import csv
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet", ".arrow": "arrow"}
"""File suffix -> the ``datasets`` builder that reads it; other folders go to ``load_dataset`` as they are."""

QUIET_BYTES = 64 * 2**20
"""Folders smaller than this are read without ``datasets``' progress bars (they take a blink)."""

JSON_EXAMPLE = '{"tokens": ["Ada", "Lovelace"], "ner_tags": ["B-person", "I-person"]}'
CSV_EXAMPLE = 'the line "[\'Ada\', \'Lovelace\']","[\'B-person\', \'I-person\']" under tokens,ner_tags'


@dataclass
class FileRows:
    """One file's rows: the name shown in messages and, for files with lines, each row's 1-based line."""

    shown: str
    lines: list[int] | None
    count: int | None  # rows in the file (None: unknown until datasets reads it)


class Places:
    """``places(i)`` is where row ``i`` of a split sits: ``js/train.jsonl:2`` or ``data/train.parquet row 2``."""

    def __init__(self, files: list[FileRows], fallback: str):
        self.files = files
        self.fallback = fallback
        self.starts: list[int] = []
        total = 0
        for f in files:
            self.starts.append(total)
            total += f.count or 0
        self.total = total if all(f.count is not None for f in files) else None

    def __call__(self, i: int) -> str:
        if self.total is None or not 0 <= i < self.total:
            return f"{self.fallback} row {i + 1}"
        k = bisect.bisect_right(self.starts, i) - 1
        f, local = self.files[k], i - self.starts[k]
        return f"{f.shown}:{f.lines[local]}" if f.lines is not None else f"{f.shown} row {local + 1}"


def split_files(folder: Path) -> dict[str, list[Path]] | None:
    """``{split: files}`` of a local folder by ``datasets``' patterns (``dev`` and ``valid`` are ``validation``);
    ``None`` when the folder is not plain files of one format this module reads (a dataset card with
    ``configs:``, Arrow from ``save_to_disk``, other suffixes): ``load_dataset`` then reads it as it is."""
    from datasets.data_files import DataFilesDict, get_data_patterns
    from datasets.exceptions import DataFilesNotFoundError

    readme = folder / "README.md"
    if readme.is_file() and "configs:" in readme.read_text(encoding="utf-8", errors="replace"):
        return None
    if (folder / "dataset_dict.json").is_file():
        return None
    try:
        found = DataFilesDict.from_patterns(get_data_patterns(str(folder)), base_path=str(folder))
    except (FileNotFoundError, DataFilesNotFoundError, ValueError):
        return None
    out = {str(split): [Path(p) for p in files] for split, files in found.items()}
    suffixes = {p.suffix.lower() for files in out.values() for p in files}
    if not out or not suffixes <= set(BUILDERS) or len({BUILDERS[s] for s in suffixes}) != 1:
        return None
    return out


class _Undecodable(Exception):
    """A line that is not UTF-8: the scan stops there (``problem`` says where)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def _lines(path: Path, shown: str) -> Iterator[str]:
    """``path``'s lines, each decoded as it is read (a stream: memory holds one line, never the file), split at
    ``\n`` only and ending with it (as ``open(newline="")`` gives them to ``csv``); a UTF-8 byte-order mark is
    dropped. Bytes that are not UTF-8 raise :class:`_Undecodable` naming the line."""
    with open(path, "rb") as stream:
        for number, raw in enumerate(stream, start=1):
            try:
                yield raw.decode("utf-8").removeprefix("\ufeff") if number == 1 else raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise _Undecodable(f"{shown}:{number}: bytes {raw[err.start:err.end]!r} are not UTF-8 ({err.reason}); "
                                   "save the file as UTF-8") from None


def _scan_jsonl(path: Path, shown: str, text: Iterable[str]) -> tuple[FileRows, list[str]]:
    problems, lines = [], []
    for number, line in enumerate(text, start=1):
        line = line.removesuffix("\n")  # a column in the message counts on this line, not the next
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (ValueError, RecursionError) as err:  # RecursionError: arrays nested thousands deep
            msg = getattr(err, "msg", None) or ("nested too deeply" if isinstance(err, RecursionError) else str(err))
            column = getattr(err, "colno", None)
            where = f": column {column}" if column else ""
            problems.append(f"{shown}:{number}: not a complete JSON object ({msg}{where}); each line holds one "
                            f"object, e.g. {JSON_EXAMPLE}")
            continue
        if not isinstance(row, dict):
            problems.append(f"{shown}:{number}: a JSON {type(row).__name__}, not an object; each line holds one "
                            f"object, e.g. {JSON_EXAMPLE}")
            continue
        lines.append(number)
    return FileRows(shown, lines, len(lines)), problems


def _scan_json(path: Path, shown: str) -> tuple[FileRows, list[str]]:
    with open(path, "rb") as stream:  # only an array is read whole (it is one value); anything else line by line
        head = stream.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not head.startswith("["):
        return _scan_jsonl(path, shown, _lines(path, shown))
    try:
        whole = json.loads("".join(_lines(path, shown)))
    except (ValueError, RecursionError):
        return _scan_jsonl(path, shown, _lines(path, shown))  # JSON Lines under a .json name
    if isinstance(whole, list):
        if all(isinstance(row, dict) for row in whole):
            return FileRows(shown, None, len(whole)), []
        return FileRows(shown, None, 0), [f"{shown}: a JSON array whose items are not all objects; give one object "
                                          f"per row, e.g. [{JSON_EXAMPLE}]"]
    return _scan_jsonl(path, shown, _lines(path, shown))  # one object on one line is one row of JSON Lines


def _scan_csv(path: Path, shown: str, text: Iterable[str]) -> tuple[FileRows, list[str]]:
    # csv's default cap of 128 KB a cell is not a CSV rule (pandas, which datasets reads with, has none): a big cell
    # is the rows' to judge (a 5 MB tag is "not BIO"), never "field larger than field limit"
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(text, strict=True)
    lines: list[int] = []
    problems: list[str] = []
    header: list[str] | None = None
    start = 1
    while True:
        start = reader.line_num + 1
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as err:
            why = ("a quoted cell opened on this line is never closed (an unbalanced \"); close it, and write a quote "
                   "inside a cell as \"\"" if "end of data" in str(err) else
                   f"{err}; a quote inside a cell is written \"\" and a quoted cell ends at a comma or line end")
            problems.append(f"{shown}:{start}: {why}")
            break  # past an unbalanced quote the rest of the file cannot be split into rows
        if not record:
            continue  # a blank line: pandas skips it too
        if header is None:
            header = record
            continue
        if len(record) != len(header):
            named = ", ".join(header)
            problems.append(f"{shown}:{start}: {len(record)} cells where the header has {len(header)} "
                            f"({named if len(named) <= 80 else named[:77] + '...'}); quote a cell that holds a comma")
            continue
        lines.append(start)
    if header is None and not problems:
        problems.append(f"{shown}:1: no header line; a CSV file starts with its column names, e.g. tokens,ner_tags")
    return FileRows(shown, lines, len(lines)), problems


def _scan_parquet(path: Path, shown: str) -> tuple[FileRows, list[str]]:
    import pyarrow
    import pyarrow.parquet as pq

    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except (pyarrow.ArrowException, OSError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        return FileRows(shown, None, 0), [f"{shown}: not a readable Parquet file ({first}); write it again with "
                                          "DataFrame.to_parquet or Dataset.to_parquet"]
    return FileRows(shown, None, rows), []


def scan_file(path: Path, shown: str) -> tuple[FileRows, list[str]]:
    """One file's rows and every problem in it (``shown``: the file as messages name it); a file without a row is
    one (``datasets`` would stop at it with a ``StopIteration`` traceback)."""
    rows, problems = _scan_file(path, shown)
    if not problems and rows.count == 0:
        what = {".csv": "only its header line", ".parquet": "a table of no rows"}.get(path.suffix.lower(),
                                                                                 "no JSON object")
        problems.append(f"{shown}: no rows (the file holds {what}); give it at least one sentence, e.g. "
                        f"{JSON_EXAMPLE if path.suffix.lower() != '.csv' else CSV_EXAMPLE}")
    return rows, problems


def _scan_file(path: Path, shown: str) -> tuple[FileRows, list[str]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return _scan_parquet(path, shown)
    if suffix == ".arrow":
        return FileRows(shown, None, None), []
    try:  # read as a stream, line by line: a file of any size is scanned in the memory of one line
        if suffix == ".csv":
            return _scan_csv(path, shown, _lines(path, shown))
        if suffix == ".json":
            return _scan_json(path, shown)
        return _scan_jsonl(path, shown, _lines(path, shown))
    except _Undecodable as err:
        return FileRows(shown, None, 0), [err.problem]


def read_folder(folder: Path, shown_root: str, problems: list[str] | None = None
                ) -> tuple[dict[str, Any], dict[str, Places], dict[str, list[str]]] | None:
    """``(splits, places, files)`` of a local folder of JSON Lines / CSV / Parquet files, or ``None`` when
    :func:`split_files` leaves it to ``load_dataset``. ``shown_root`` is the folder as the user named it.

    Without ``problems`` the first problem raises a one-line ``ValueError``; with a list, every problem is
    appended and the files without one are still read (the data check)."""
    folder = folder.resolve()
    files = split_files(folder)
    if files is None:
        return None
    places: dict[str, Places] = {}
    readable: dict[str, list[Path]] = {}
    for split, paths in files.items():
        scanned = []
        for path in paths:
            shown = str(Path(shown_root) / path.relative_to(folder))
            rows, found = scan_file(path, shown)
            if found and problems is None:
                raise ValueError(found[0] + ".")
            if found:
                problems.extend(found)
                continue
            scanned.append(rows)
            readable.setdefault(split, []).append(path)
        places[split] = Places(scanned, f"{shown_root} {split}")
    builder = BUILDERS[next(p.suffix.lower() for ps in files.values() for p in ps)]
    splits = _load(builder, readable, shown_root) if readable else {}
    for split, data in splits.items():
        if places[split].total is not None and places[split].total != len(data):
            logger.debug("%s %s: %d rows read, %d counted; places fall back to row numbers", shown_root, split,
                         len(data), places[split].total)
            places[split] = Places([], f"{shown_root} {split}")
    return splits, places, {split: [str(Path(shown_root) / p.relative_to(folder)) for p in ps]
                            for split, ps in files.items()}


def _load(builder: str, files: Mapping[str, list[Path]], shown_root: str) -> dict[str, Any]:
    """``load_dataset(builder, data_files=files)``, a failure one line (the scan catches what it can name first)."""
    import pyarrow
    from datasets import load_dataset
    from datasets.exceptions import DatasetGenerationError

    from datasets.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    # a bar for files read in a blink is noise, and a problem found right after it should be the output's last line
    quiet = sum(p.stat().st_size for paths in files.values() for p in paths) < QUIET_BYTES
    was_disabled = are_progress_bars_disabled()
    if quiet:
        disable_progress_bars()
    try:
        loaded = load_dataset(builder, data_files={split: [str(p) for p in paths] for split, paths in files.items()})
    except (DatasetGenerationError, pyarrow.ArrowException, ValueError, OSError, StopIteration) as err:
        # StopIteration: datasets' json builder reads a first table of a file that has none
        cause = err.__cause__ or err.__context__ or err
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
        raise ValueError(f"{shown_root}: the {builder} files could not be read ({first[:200]}); check that every "
                         "row has the same columns with the same kinds of values.") from None
    finally:
        if quiet and not was_disabled:
            enable_progress_bars()
    return dict(loaded)


# ----------------------------------------------------------------------------- any source's splits

SPLIT_ALIASES = {"train": ("train",), "validation": ("validation", "dev", "valid"), "test": ("test",)}
"""A split's names in a source: ``dev`` and ``valid`` are its validation split too."""


def load_splits(source: str | Path, problems: list[str] | None = None
                ) -> tuple[dict[str, Any], dict[str, Any], dict[str, list[str]]]:
    """``(splits, places, files)``: the train / validation / test of ``source`` (``dev`` and ``valid`` accepted for
    validation), where each row sits (:class:`Places`) and the files of each split.

    ``source`` is a local folder of JSON Lines / CSV / Parquet files (read by :func:`read_folder`: every malformed
    line one line naming ``file:line``), another folder ``load_dataset`` opens, or a Hub id. A name that is neither
    an existing path nor reachable on the Hub is one line saying both. ``problems``: as :func:`read_folder` takes it.
    """
    from datasets import load_dataset
    from datasets.exceptions import DatasetGenerationError

    from crossner_hf.encoders import hub_offline

    path = Path(str(source)).expanduser()
    looks_like_repo = re.fullmatch(r"[\w.-]+(/[\w.-]+)?", str(source)) is not None and not str(source).startswith(".")
    if not path.exists() and (not looks_like_repo or hub_offline(datasets_too=True)):
        why = ("and as a Hub dataset id it was not looked up (HF_HUB_OFFLINE / HF_DATASETS_OFFLINE is set)"
               if looks_like_repo else "and it cannot be a Hub dataset id")
        raise FileNotFoundError(f"--dataset_dir {source}: no such folder or file ({path.resolve()}), {why}; pass a "
                                "CrossNER domain, a CoNLL folder, or a folder of train/validation/test files "
                                "(JSON Lines, CSV, Parquet).")
    read = read_folder(path, str(source), problems) if path.is_dir() else None
    if read is not None:
        loaded, places, files = read
    else:
        try:
            loaded = load_dataset(str(path) if path.exists() else str(source))
        except (FileNotFoundError, ConnectionError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            where = "the folder" if path.exists() else "no such local folder, and the Hub"
            raise FileNotFoundError(f"--dataset_dir {source}: {where} could not be read as a dataset "
                                    f"({first[:200]}).") from None
        except (DatasetGenerationError, StopIteration) as err:  # a broken or empty file of a folder read as it is
            cause = err.__cause__ or err.__context__ or err
            why = " ".join(str(cause).split())[:200] or f"{type(cause).__name__}: is a file empty?"
            raise ValueError(f"--dataset_dir {source}: could not be read ({why}).") from None
        places, files = {}, {}
    splits = {}
    for split, aliases in SPLIT_ALIASES.items():
        found = next((a for a in aliases if a in loaded), None)
        if found is None:
            if problems is not None and any(a in files for a in aliases):
                continue  # its files were unreadable: said in problems
            message = (f"--dataset_dir {source}: it gives the splits {list(loaded)}; a {split} split is needed (a "
                       f"file or split named {' or '.join(aliases)}).")
            if problems is None:
                raise ValueError(message)
            problems.append(message)
            continue
        splits[split] = loaded[found]
        if found in places:
            places[split] = places.pop(found)
        if found in files:
            files[split] = files.pop(found)
    return splits, places, files
