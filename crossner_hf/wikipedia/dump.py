"""Reading MediaWiki ``pages-articles`` XML dumps: plain, bz2, or bz2 multistream with its index.

The exporter writes one tag a line (``<title>``, ``<ns>``, ``<id>``, ``<redirect .../>``,
``<text ...>``), so pages are read by a line-based state machine, the way WikiExtractor does
it, rather than by an XML tree parser: it is several times faster, keeps memory flat (one
page at a time), and reads a *fragment* of a dump (one multistream bz2 stream, or a byte
range of a plain file) that has no root element. Only the XML escapes the exporter writes
(``&lt; &gt; &amp; &quot; &#039;``) are decoded here; HTML entities inside the wikitext are
the wikitext parser's business.

Units of work
    A dump is cut into :class:`DumpUnit` s that a worker can read on its own: a whole file
    (single-stream bz2 cannot be split), a run of multistream bz2 streams (byte offsets
    from the ``offset:page_id:title`` index), or a byte range of a plain XML file (a range
    owns the pages whose ``<page>`` line starts inside it).

Errors
    A file that ends inside a page, lacks ``</mediawiki>``, or whose bz2 data is corrupt
    raises :class:`DumpError`, naming the file and how many pages were read before.

Example:
    >>> pages = list(iter_pages("enwiki-sample-pages-articles.xml.bz2"))  # doctest: +SKIP
    >>> pages[0].title, pages[0].redirect                                  # doctest: +SKIP
    ('AccessibleComputing', 'Computer accessibility')
"""

from __future__ import annotations

import bisect
import bz2
import codecs
import io
import logging
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

ARTICLE_NAMESPACE = 0
CATEGORY_NAMESPACE = 14
_READ_CHUNK = 1 << 20


class DumpError(ValueError):
    """A dump that cannot be read to the end: truncated, corrupt, or not a MediaWiki export."""

    def __init__(self, path: str | os.PathLike, pages_read: int, problem: str):
        self.path = str(path)
        self.pages_read = pages_read
        super().__init__(
            f"{path}: {problem} after {pages_read} page(s) read. Re-download the file (check its size and "
            "checksum against the dump's md5sums/sha1sums), or drop it from --dump."
        )
        self.problem = problem

    def __reduce__(self):  # rebuilt in the parent when a worker process raises it
        return (type(self), (self.path, self.pages_read, self.problem))


def _drop_user_error_tracebacks(record: dict) -> None:
    """loguru patcher: a :class:`DumpError` is logged by datatrove as its one-line message, no traceback.

    datatrove's executor logs every failing task with ``logger.exception`` (a 100-line traceback with
    variable dumps on the console and in the task log) before re-raising; for a cut or corrupt dump
    the message already names the file, the pages read and the fix, which the command prints last.
    Other errors (bugs) keep their tracebacks.
    """
    exception = record["exception"]
    if exception is not None and isinstance(exception.value, DumpError):
        record["exception"] = None


def quiet_user_errors() -> None:
    """Log a :class:`DumpError` in a datatrove task as its one line (see :func:`_drop_user_error_tracebacks`)."""
    # a patcher is global to loguru and survives datatrove's per-task sink changes; installed in the
    # main process and again in each worker (forkserver workers import this module afresh)
    from datatrove.utils.logging import logger as task_logger  # loguru: console and each task's log

    task_logger.configure(patcher=_drop_user_error_tracebacks)


@dataclass(slots=True)
class Page:
    """One ``<page>`` of a dump. ``wikitext`` is ``""`` for pages the reader was told to skip."""

    title: str
    id: int
    namespace: int
    wikitext: str
    redirect: str | None = None


@dataclass(frozen=True, slots=True)
class DumpUnit:
    """A piece of a dump one worker reads by itself.

    ``kind`` is ``"file"`` (the whole file), ``"streams"`` (bz2 streams starting at byte
    ``start``, ending before ``end``) or ``"bytes"`` (pages of a plain XML file whose
    ``<page>`` line starts in ``[start, end)``).
    """

    path: str
    kind: str = "file"
    start: int = 0
    end: int = -1

    @property
    def size(self) -> int:
        return (os.path.getsize(self.path) if self.end < 0 else self.end) - self.start

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "start": self.start, "end": self.end}


def _unescape(text: str) -> str:
    # the exporter's escapes only; &amp; last so that "&amp;lt;" stays "&lt;"
    if "&" not in text:
        return text
    return (
        text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&#039;", "'")
        .replace("&#39;", "'").replace("&amp;", "&")
    )


def _inner(line: str, tag: str) -> str:
    start = line.find(">") + 1
    end = line.rfind(f"</{tag}>")
    return line[start:end] if end >= 0 else line[start:]


def parse_pages(
    lines: Iterable[str], path: str | os.PathLike, *, namespaces: frozenset[int] | None = None,
    fragment: bool = False, counter: list[int] | None = None,
) -> Iterator[Page]:
    """Pages from the lines of a dump (or, with ``fragment=True``, of a piece of one).

    Args:
        lines: decoded lines, newline kept or not.
        path: the file, for error messages.
        namespaces: keep the wikitext of pages in these namespaces only (``None``: all);
            other pages are still yielded, with empty wikitext, so redirects and titles of
            every namespace can be collected cheaply.
        fragment: a piece without ``<mediawiki>``/``</mediawiki>``; it must still end
            between pages.
        counter: a one-element list incremented per page (pages read, for the caller's
            own error message when its read fails).
    """
    counter = counter if counter is not None else [0]
    in_page = in_text = in_revision = False
    closed = fragment
    title, page_id, namespace, redirect = "", -1, 0, None
    keep = False
    text_parts: list[str] = []
    for raw in lines:
        if in_text:
            end = raw.find("</text>")
            if end < 0:
                if keep:
                    text_parts.append(raw)
                continue
            if keep:
                text_parts.append(raw[:end])
            in_text = False
            continue
        line = raw.strip()
        if not line:
            continue
        if line.startswith("<page>"):
            if in_page:
                raise DumpError(path, counter[0], "a <page> opens inside another page (broken XML)")
            in_page, in_revision = True, False
            title, page_id, namespace, redirect = "", -1, 0, None
            keep = namespaces is None or ARTICLE_NAMESPACE in namespaces
            text_parts = []
        elif not in_page:
            if line.startswith("</mediawiki>"):
                closed = True
            continue
        elif line.startswith("<title>"):
            title = _unescape(_inner(line, "title"))
        elif line.startswith("<ns>"):
            namespace = int(_inner(line, "ns"))
            keep = namespaces is None or namespace in namespaces
        elif line.startswith("<id>") and not in_revision and page_id < 0:
            page_id = int(_inner(line, "id"))
        elif line.startswith("<revision>"):
            in_revision = True
        elif line.startswith("<redirect"):
            start = line.find('title="')
            if start >= 0:
                redirect = _unescape(line[start + 7: line.find('"', start + 7)])
        elif line.startswith("<text"):
            if line.endswith("/>") and "</text>" not in line:
                continue  # <text ... /> : an empty revision
            body = raw[raw.find(">", raw.find("<text")) + 1:]
            end = body.find("</text>")
            if end >= 0:
                if keep:
                    text_parts.append(body[:end])
            else:
                in_text = True
                if keep:
                    text_parts.append(body)
        elif line.startswith("</page>"):
            in_page = False
            counter[0] += 1
            wikitext = _unescape("".join(text_parts)) if keep else ""
            yield Page(title=title, id=page_id, namespace=namespace, wikitext=wikitext, redirect=redirect)
    if in_page or in_text:
        raise DumpError(path, counter[0], f"the file ends inside the page {title or '(untitled)'!r} (truncated)")
    if not closed:
        raise DumpError(path, counter[0], "no closing </mediawiki> (the file is truncated)")


def _lines(binary: io.BufferedIOBase) -> Iterator[str]:
    return io.TextIOWrapper(binary, encoding="utf-8", newline="\n")


def open_dump(path: str | os.PathLike) -> io.BufferedIOBase:
    """The decompressed bytes of a dump file (``.bz2`` by suffix, any number of streams)."""
    path = str(path)
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


def iter_pages(path: str | os.PathLike, *, namespaces: Iterable[int] | None = None) -> Iterator[Page]:
    """Every page of a whole dump file, in file order (``title, id, namespace, wikitext, redirect``)."""
    yield from iter_unit_pages(DumpUnit(str(path)), namespaces=namespaces)


def iter_unit_pages(unit: DumpUnit, *, namespaces: Iterable[int] | None = None,
                    cached: str | os.PathLike | None = None) -> Iterator[Page]:
    """The pages of one unit of work (see :class:`DumpUnit`); from ``cached``, the unit's XML as
    :func:`iter_unit_redirects` kept it, when that file exists (the bz2 data is then not decompressed again)."""
    keep = frozenset(namespaces) if namespaces is not None else None
    counter = [0]
    try:
        if cached is not None and os.path.isfile(cached):
            yield from parse_pages(_chunk_lines(_cached_chunks(cached)), unit.path, namespaces=keep,
                                   fragment=unit.kind != "file", counter=counter)
        elif unit.kind == "file":
            with open_dump(unit.path) as binary:
                yield from parse_pages(_lines(binary), unit.path, namespaces=keep, counter=counter)
        elif unit.kind == "streams":
            yield from parse_pages(_stream_lines(unit), unit.path, namespaces=keep, fragment=True, counter=counter)
        elif unit.kind == "bytes":
            yield from parse_pages(_byte_range_lines(unit), unit.path, namespaces=keep, fragment=True,
                                   counter=counter)
        else:
            raise ValueError(f"DumpUnit kind {unit.kind!r} is not one of file, streams, bytes.")
    except (OSError, EOFError, UnicodeDecodeError) as err:
        # bz2 raises OSError("Invalid data stream") / EOFError on corrupt or cut data
        raise DumpError(unit.path, counter[0], f"unreadable data ({type(err).__name__}: {err})") from err


def _stream_chunks(unit: DumpUnit) -> Iterator[bytes]:
    """The decompressed bytes of the bz2 streams in ``[start, end)``, one after the other, in chunks."""
    end = unit.end if unit.end >= 0 else os.path.getsize(unit.path)
    with open(unit.path, "rb") as handle:
        handle.seek(unit.start)
        remaining = end - unit.start
        decompressor, fed = bz2.BZ2Decompressor(), False
        while remaining > 0:
            chunk = handle.read(min(_READ_CHUNK, remaining))
            if not chunk:
                raise EOFError(f"the file ends at byte {handle.tell()}, before the index's offset {end}")
            remaining -= len(chunk)
            while chunk:
                data = decompressor.decompress(chunk)
                fed = True
                if data:
                    yield data
                if decompressor.eof:
                    chunk = decompressor.unused_data
                    decompressor, fed = bz2.BZ2Decompressor(), False
                else:
                    chunk = b""
        if fed:
            raise EOFError(f"a bz2 stream is cut off at byte {end}")


def _stream_lines(unit: DumpUnit) -> Iterator[str]:
    """The lines of the bz2 streams in ``[start, end)``."""
    return _chunk_lines(_stream_chunks(unit))


def _chunk_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """The lines of UTF-8 bytes given in chunks, each with its newline (the last one's if the data has it)."""
    pending = ""
    decode = codecs.getincrementaldecoder("utf-8")().decode  # a character may straddle two chunks
    for data in chunks:
        pending += decode(data)
        *complete, pending = pending.split("\n")
        for line in complete:
            yield line + "\n"  # as the file readers do: parse_pages joins text lines as they are
    if pending:
        yield pending


_PAGE_LINE = re.compile(rb"^[ \t]*<page>", re.MULTILINE)


def _byte_range_chunks(unit: DumpUnit) -> Iterator[bytes]:
    """The bytes of a plain XML file from the first ``<page>`` line at or after ``start`` through the end
    of the last page whose line starts before ``end`` (the pages the range owns), in chunks of whole lines."""
    end = unit.end if unit.end >= 0 else os.path.getsize(unit.path)
    with open(unit.path, "rb") as handle:
        handle.seek(unit.start)
        if unit.start > 0:
            handle.readline()  # a partial line belongs to the previous range
        position, carry, started = handle.tell(), b"", False
        while True:
            chunk = handle.read(_READ_CHUNK)
            data, base = carry + chunk, position - len(carry)  # base: the file offset of data[0]
            position += len(chunk)
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            lines, carry = data[:cut], data[cut:]
            if not started:
                first = _PAGE_LINE.search(lines)
                if first is None:
                    if not chunk:
                        return
                    continue
                if base + first.start() >= end:
                    return
                started, lines, base = True, lines[first.start():], base + first.start()
            after = _PAGE_LINE.search(lines, max(0, end - base))  # the next range's first page
            if after is not None:
                yield lines[:after.start()]
                return
            if lines:
                yield lines
            if not chunk:
                return


def _byte_range_lines(unit: DumpUnit) -> Iterator[str]:
    """The lines of the pages a byte range of a plain XML file owns (see :func:`_byte_range_chunks`)."""
    for data in _byte_range_chunks(unit):
        *lines, last = data.decode("utf-8").split("\n")  # chunks are whole lines: no character is cut
        for line in lines:
            yield line + "\n"
        if last:
            yield last


def _unit_chunks(unit: DumpUnit) -> Iterator[bytes]:
    """The decompressed XML bytes of a unit (see :class:`DumpUnit`)."""
    if unit.kind == "streams":
        yield from _stream_chunks(unit)
    elif unit.kind == "bytes":
        yield from _byte_range_chunks(unit)
    elif unit.kind == "file":
        with open_dump(unit.path) as binary:
            yield from iter(lambda: binary.read(_READ_CHUNK), b"")
    else:
        raise ValueError(f"DumpUnit kind {unit.kind!r} is not one of file, streams, bytes.")


def _cached_chunks(path: str | os.PathLike) -> Iterator[bytes]:
    """The bytes of a unit's XML kept by :func:`iter_unit_redirects` (zstd), in chunks."""
    import pyarrow as pa

    with pa.CompressedInputStream(pa.OSFile(str(path)), "zstd") as stream:
        yield from iter(lambda: stream.read(_READ_CHUNK), b"")


def _kept(chunks: Iterable[bytes], path: str) -> Iterator[bytes]:
    """``chunks`` passed through and written to ``path`` (zstd)."""
    import pyarrow as pa

    with pa.CompressedOutputStream(path, "zstd") as stream:
        for chunk in chunks:
            stream.write(chunk)
            yield chunk


_HEAD_BYTES = 1 << 16
"""A page's head (``<page>`` through ``<redirect .../>``) is far shorter: a title is at most 255 bytes."""
_REDIRECT_HEAD = re.compile(rb'<page>\s*<title>([^<]*)</title>\s*<ns>(-?\d+)</ns>\s*<id>\d+</id>\s*'
                            rb'<redirect title="([^"]*)"')
_TITLE_BYTES = re.compile(rb"<title>([^<\n]*)")  # a cut title as far as it goes, as the page reader gives it


def _head_segments(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The chunks re-cut at line starts, never inside a page's head (so a head is in one segment)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        cut = pending.rfind(b"\n") + 1
        last_page = pending.rfind(b"<page>", max(0, len(pending) - _HEAD_BYTES))
        if last_page >= 0:
            cut = min(cut, pending.rfind(b"\n", 0, last_page) + 1)
        if cut:
            yield pending[:cut]
            pending = pending[cut:]
    if pending:
        yield pending


def iter_unit_redirects(unit: DumpUnit, *, namespaces: Iterable[int] = (ARTICLE_NAMESPACE,),
                        keep_xml: str | os.PathLike | None = None) -> Iterator[tuple[str, str]]:
    """``(title, target)`` of the redirect pages of one unit in ``namespaces``, read without its text.

    A byte-level scan of the decompressed XML for the page heads that hold ``<redirect title=...>``
    (no line splitting, no decoding of wikitext): the redirect map's pre-scan costs about the bz2
    decompression alone. A cut, corrupt or unclosed dump raises the :class:`DumpError` the page reader
    raises, naming the same page.

    ``keep_xml``: a bz2 unit's decompressed XML is also written there, zstd-compressed (a fortieth of the
    bz2 decompression's time to write and to read back; about 0.38 of the XML's size on disk), for
    :func:`iter_unit_pages` to read instead of decompressing the bz2 data a second time.
    """
    wanted = {str(n).encode() for n in namespaces}
    try:
        yield from _scan_redirects(unit, wanted, keep_xml)
        if keep_xml is not None and os.path.exists(f"{keep_xml}.tmp"):
            os.replace(f"{keep_xml}.tmp", keep_xml)
    finally:
        if keep_xml is not None and os.path.exists(f"{keep_xml}.tmp"):
            os.unlink(f"{keep_xml}.tmp")


def _scan_redirects(unit: DumpUnit, wanted: set[bytes], keep_xml: str | os.PathLike | None
                    ) -> Iterator[tuple[str, str]]:
    opened = closed = 0
    last_title = b""
    finished = unit.kind != "file"  # fragments have no </mediawiki>
    try:
        chunks = _unit_chunks(unit)
        if keep_xml is not None and unit.kind != "bytes" and unit.path.endswith(".bz2"):
            chunks = _kept(chunks, f"{keep_xml}.tmp")  # renamed once the unit has been read whole and checked
        for segment in _head_segments(chunks):
            for match in _REDIRECT_HEAD.finditer(segment):
                if match.group(2) in wanted:
                    yield (_unescape(match.group(1).decode("utf-8")), _unescape(match.group(3).decode("utf-8")))
            opened += segment.count(b"<page>")
            closed += segment.count(b"</page>")
            last_page = segment.rfind(b"<page>")
            if last_page >= 0:
                title = _TITLE_BYTES.search(segment, last_page)
                last_title = title.group(1) if title else b""
            finished = finished or b"</mediawiki>" in segment
    except (OSError, EOFError, UnicodeDecodeError) as err:
        raise DumpError(unit.path, closed, f"unreadable data ({type(err).__name__}: {err})") from err
    if opened > closed:
        title = _unescape(last_title.decode("utf-8", "replace")) or "(untitled)"
        raise DumpError(unit.path, closed, f"the file ends inside the page {title!r} (truncated)")
    if not finished:
        raise DumpError(unit.path, closed, "no closing </mediawiki> (the file is truncated)")


def read_multistream_index(path: str | os.PathLike) -> list[int]:
    """Sorted distinct stream offsets of a multistream index (``offset:page_id:title`` lines,
    plain or ``.bz2``)."""
    path = str(path)
    opener = bz2.open if path.endswith(".bz2") else open
    offsets: set[int] = set()
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            head = line.split(":", 1)[0]
            if not head.isdigit():
                raise ValueError(
                    f"{path}:{number}: expected 'offset:page_id:title', got {line.strip()[:80]!r}; pass the "
                    "dump's *-multistream-index.txt(.bz2) file with --index."
                )
            offsets.add(int(head))
    return sorted(offsets)


def plan_units(
    dumps: Iterable[str | os.PathLike], *, indexes: Iterable[str | os.PathLike] | None = None,
    unit_bytes: int = 64 << 20, multiple_of: int = 1,
) -> list[DumpUnit]:
    """Cut dump files into units of about ``unit_bytes`` of file each, of even size.

    A multistream bz2 file with an index becomes runs of whole streams (the first stream,
    the ``<siteinfo>`` header, is left out: it has no pages); a plain XML file becomes byte
    ranges; a single-stream bz2 file stays one unit. ``indexes`` pairs with ``dumps`` by
    position (``None`` or ``""`` for a dump without one).

    A file is cut into ``ceil(size / unit_bytes)`` pieces at the stream starts nearest to
    even shares, so no small last piece is left over. With ``multiple_of`` (the number of
    tasks that run at once), the largest pieces are split further until the number of units
    is a multiple of it: then the last round of tasks keeps every worker busy (9 units on 2
    workers would leave one worker idle for a ninth of the work).
    """
    dumps = [str(d) for d in dumps]
    index_list = [str(i) if i else "" for i in (indexes or [])]
    if index_list and len(index_list) != len(dumps):
        raise ValueError(
            f"--index: got {len(index_list)} index file(s) for {len(dumps)} dump(s); give one per dump, in order "
            "(an empty string for a dump without one)."
        )
    if multiple_of < 1:
        raise ValueError(f"multiple_of must be >= 1, got {multiple_of}.")
    # per dump: its kind, the byte positions it may be cut at (None: anywhere), its end, and how many pieces
    plans: list[tuple[str, str, list[int] | None, int, int]] = []
    for number, dump in enumerate(dumps):
        if not Path(dump).is_file():
            raise FileNotFoundError(f"--dump: {dump} does not exist.")
        size = os.path.getsize(dump)
        index = index_list[number] if index_list else ""
        if index:
            starts = read_multistream_index(index)
            plans.append((dump, "streams", starts, size, -(-(size - starts[0]) // max(unit_bytes, 1))))
        elif dump.endswith(".bz2"):
            plans.append((dump, "file", [0], size, 1))
        else:
            plans.append((dump, "bytes", None, size, -(-size // max(unit_bytes, 1))))
    plans = [(d, k, s, e, max(1, min(n, _most_pieces(k, s, e)))) for d, k, s, e, n in plans]
    for _ in range(-sum(p[4] for p in plans) % multiple_of):
        splittable = [i for i, (_, k, s, e, n) in enumerate(plans) if n < _most_pieces(k, s, e)]
        if not splittable:
            break
        i = max(splittable, key=lambda i: (plans[i][3] - (plans[i][2] or [0])[0]) / plans[i][4])
        plans[i] = (*plans[i][:4], plans[i][4] + 1)
    units: list[DumpUnit] = []
    for dump, kind, starts, end, pieces in plans:
        if kind == "file":
            units.append(DumpUnit(dump, "file"))
            continue
        cuts = _even_cuts(starts, end, pieces)
        units.extend(DumpUnit(dump, kind, a, b) for a, b in zip(cuts, cuts[1:]))
    return units


def _most_pieces(kind: str, starts: list[int] | None, end: int) -> int:
    return 1 if kind == "file" else len(starts) if starts is not None else max(end, 1)


def _even_cuts(starts: list[int] | None, end: int, pieces: int) -> list[int]:
    """``pieces + 1`` increasing boundaries from the first start to ``end``, nearest to even shares."""
    if starts is None:  # a plain file cuts anywhere: a range owns the pages whose <page> line starts in it
        return [end * j // pieces for j in range(pieces)] + [end]
    first, previous = starts[0], 0
    cuts = [first]
    for j in range(1, pieces):
        target = first + (end - first) * j / pieces
        at = bisect.bisect_left(starts, target)
        if at > 0 and (at == len(starts) or target - starts[at - 1] <= starts[at] - target):
            at -= 1
        # leave at least one stream to each piece before and after this cut
        previous = min(max(at, previous + 1), len(starts) - (pieces - j))
        cuts.append(starts[previous])
    return cuts + [end]
