"""Article text + anchors -> sentences of CrossNER-style words with the anchors as word spans.

Sentences come from NLTK punkt (``punkt_tab``), run on each line of the article text
separately (a line is a paragraph or a list item; punkt alone would join list items that
end without a period). Words come from the Penn Treebank tokenizer the CrossNER files
follow (``crossner_hf.data.words``). Both run here as NLTK's own, made faster without changing
their output: punkt's fixed patterns on the stdlib ``re`` engine (:func:`_stdlib_punkt`, 3x), and
each Treebank pattern skipped where the sentence lacks what its matches hold
(:func:`_guarded_word_tokenizer`, 1.75x). Punkt's English data is looked up in the ``nltk_data``
argument, then ``NLTK_DATA``; :func:`require_punkt` fails with a message naming both.

An anchor covers the words it overlaps. When its boundary falls inside a word
(``[[Paris]]ian`` has no link trail: the word "Parisian" holds the anchor "Paris") the word
is taken whole and the case is counted (``boundary_inside_word``). An anchor that punkt
splits across two sentences joins them into one sentence (``sentences_joined``). When two
anchors claim the same word, the first keeps it (``overlapping_anchors``).

Example:
    >>> text = "Lincoln was born in Kentucky. He moved to Illinois."
    >>> anchors = [(0, 7, "Abraham Lincoln"), (20, 28, "Kentucky"), (42, 50, "Illinois")]
    >>> [(s.words, s.spans) for s in anchor_sentences(text, anchors)]  # doctest: +SKIP
    [(['Lincoln', 'was', 'born', 'in', 'Kentucky', '.'], [(0, 1, 'Abraham Lincoln'), (4, 5, 'Kentucky')]),
     (['He', 'moved', 'to', 'Illinois', '.'], [(3, 4, 'Illinois')])]
"""

from __future__ import annotations

import bisect
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from crossner_hf.data.words import _punkt, _word_tokenizer
from crossner_hf.wikipedia.wikitext import Anchor

LINE_STRIDE = 4096
"""Sentence numbers of line n start at n x LINE_STRIDE (a line of more sentences runs into the next
line's numbers: they key random draws, so a repeat only repeats a draw)."""

WordSpan = tuple[int, int, str]
"""``(first word, one past the last word, link target)`` within a sentence."""


@dataclass(slots=True)
class AnchoredSentence:
    words: list[str]
    spans: list[WordSpan] = field(default_factory=list)
    number: int = 0
    """``line x LINE_STRIDE + place in the line`` (see :func:`anchor_sentences`): the key of later random draws."""


_CHAR_GUARDS: dict[str, str] = {
    # NLTKWordTokenizer's fixed patterns (by source) -> characters one of which every match holds
    "([«“‘„]|[`]+)": "«“‘„`", '^\\"': '"', "(``)": "`", '([ \\(\\[{<])(\\"|\\\'{2})': "\"'",
    "(?i)(?<!\\w)(\\')(?!(?:re|ve|ll|m|t|s|d|n)\\b)(?=\\w)": "'",
    '([^\\.])(\\.)([\\]\\)}>"\\\'»”’ ]*+)\\s*$': ".", "([:,])([^\\d])": ":,", "([:,])$": ":,",
    "\\.{2,}": ".", "[;@#$%&]": ";@#$%&", "[\\u2012-\\u2015]": "\u2012\u2013\u2014\u2015",
    '([^\\.])(\\.)([\\]\\)}>"\\\']*)\\s*$': ".", "[?!]": "?!", "([^'])' ": "'", "[*]": "*",
    "[\\]\\[\\(\\)\\{\\}\\<\\>]": "[](){}<>", "--": "-",
    "([»”’])": "»”’", "''": "'", '"': '"', "([^' ])('[sS]|'[mM]|'[dD]|') ": "'",
    "([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ": "'",
}
_WORD_GUARDS: dict[str, str] = {
    # the case-insensitive contraction patterns -> the letters every match spells (lower-cased)
    "(?i)\\b(can)(?#X)(not)\\b": "cannot", "(?i)\\b(d)(?#X)('ye)\\b": "d'ye", "(?i)\\b(gim)(?#X)(me)\\b": "gimme",
    "(?i)\\b(gon)(?#X)(na)\\b": "gonna", "(?i)\\b(got)(?#X)(ta)\\b": "gotta", "(?i)\\b(lem)(?#X)(me)\\b": "lemme",
    "(?i)\\b(more)(?#X)('n)\\b": "more'n", "(?i)\\b(wan)(?#X)(na)(?=\\s)": "wanna",
    "(?i) ('t)(?#X)(is)\\b": "'tis", "(?i) ('t)(?#X)(was)\\b": "'twas",
}


class _Guarded:
    """One of the word tokenizer's fixed patterns whose ``sub`` is skipped when the text lacks what every
    match of it holds (a character, or for a contraction its letters): the same text comes back, without
    the regular expression's scan. Most of the 27 patterns cannot match a given sentence."""

    __slots__ = ("pattern", "needs")

    def __init__(self, pattern: re.Pattern, needs: Callable[[str], bool]):
        self.pattern, self.needs = pattern, needs

    def sub(self, replacement: str, text: str) -> str:
        return self.pattern.sub(replacement, text) if self.needs(text) else text

    def __getattr__(self, name: str):  # anything else NLTK reads off a pattern
        return getattr(self.pattern, name)


def _guard(pattern: re.Pattern) -> re.Pattern | _Guarded:
    source = pattern.pattern
    if source in _CHAR_GUARDS:
        chars = _CHAR_GUARDS[source]
        if len(chars) == 1:
            return _Guarded(pattern, lambda text, c=chars: c in text)
        return _Guarded(pattern, re.compile(f"[{re.escape(chars)}]").search)
    if source in _WORD_GUARDS:
        needle = _WORD_GUARDS[source]
        # re's case folding matches some non-ASCII letters (ı, İ, ſ, K) that str.lower does not: no skip there
        return _Guarded(pattern, lambda text, w=needle: not text.isascii() or w in text.lower())
    return pattern  # a pattern of another NLTK release: run as it is


@lru_cache(maxsize=1)
def _guarded_word_tokenizer():
    """The CrossNER word tokenizer (:func:`crossner_hf.data.words._word_tokenizer`, NLTK's ``NLTKWordTokenizer``
    on stdlib ``re``) with each fixed pattern guarded (:class:`_Guarded`): the same words and offsets (tested on
    every CrossNER sentence and the sample dump's), about twice as fast."""
    import copy

    tokenizer = copy.copy(_word_tokenizer())
    for name in ("STARTING_QUOTES", "ENDING_QUOTES", "PUNCTUATION"):
        setattr(tokenizer, name, [(_guard(p), r) for p, r in getattr(tokenizer, name)])
    for name in ("PARENS_BRACKETS", "DOUBLE_DASHES"):
        pattern, replacement = getattr(tokenizer, name)
        setattr(tokenizer, name, (_guard(pattern), replacement))
    for name in ("CONTRACTIONS2", "CONTRACTIONS3"):
        setattr(tokenizer, name, [_guard(p) for p in getattr(tokenizer, name)])
    return tokenizer


def _words_of(text: str, offset: int) -> Iterator[tuple[str, int, int]]:
    """``crossner_hf.data.words._words_of`` on the guarded tokenizer: ``(word, start, end)``, offsets + ``offset``."""
    try:
        spans = list(_guarded_word_tokenizer().span_tokenize(text))
    except ValueError:
        # span_tokenize cannot align some rare quote sequences; whitespace words never lose text
        spans = [m.span() for m in re.finditer(r"\S+", text)]
    for start, end in spans:
        yield text[start:end], offset + start, offset + end


def _import_nltk_lean() -> None:
    """Import NLTK without its optional SciPy and scikit-learn bridges, when neither is loaded yet.

    ``import nltk`` imports every subpackage, and those import ``scipy.stats`` (collocation measures) and
    scikit-learn (a classifier wrapper) when installed, inside ``try/except ImportError``: a second of
    start-up, in the builder and in each of its worker processes, for modules punkt and the word tokenizer
    never use. A ``None`` entry in ``sys.modules`` makes those imports raise ImportError (the documented
    way to block an import), so NLTK takes its fallbacks; the entries are removed right after, and a later
    ``import scipy`` or ``import sklearn`` in the process works as usual.
    """
    if "nltk" in sys.modules:
        return
    hidden = [name for name in ("scipy", "sklearn") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        import nltk  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]


@lru_cache(maxsize=4)
def _stdlib_punkt(nltk_data: str | None) -> object | None:
    """The punkt sentence tokenizer (:func:`crossner_hf.data.words._punkt`) with its fixed patterns on the stdlib
    ``re`` engine, as the word tokenizer already is: NLTK routes them through ``nltk.redos`` (the ``regex``
    engine plus a per-call timeout, a guard for caller-supplied patterns), which was a third of punkt's time.
    The same sentence spans (tested on every line of the sample dump); None without punkt's data."""
    import copy

    _import_nltk_lean()
    from nltk.tokenize import punkt as nltk_punkt

    from crossner_hf.data.words import _stdlib_pattern

    tokenizer = _punkt(nltk_data)
    if tokenizer is None:
        return None
    base_vars = type(tokenizer._lang_vars)

    class StdlibLanguageVars(base_vars):
        __slots__ = ()
        re_boundary_realignment = _stdlib_pattern(base_vars.re_boundary_realignment)

    class StdlibToken(tokenizer._Token):
        __slots__ = ()
        _RE_ELLIPSIS, _RE_NUMERIC, _RE_INITIAL, _RE_ALPHA = (_stdlib_pattern(p) for p in (
            tokenizer._Token._RE_ELLIPSIS, tokenizer._Token._RE_NUMERIC, tokenizer._Token._RE_INITIAL,
            tokenizer._Token._RE_ALPHA))
        _NON_PUNCT = _stdlib_pattern(nltk_punkt._re_non_punct)

        @property
        def is_non_punct(self):
            return self._NON_PUNCT.search(self.type)

    lang_vars = StdlibLanguageVars()
    lang_vars._re_period_context = _stdlib_pattern(tokenizer._lang_vars.period_context_re())
    lang_vars._re_word_tokenizer = _stdlib_pattern(tokenizer._lang_vars._word_tokenizer_re())
    fast = copy.copy(tokenizer)
    fast._lang_vars, fast._Token = lang_vars, StdlibToken
    return fast


def require_punkt(nltk_data: str | None = None) -> None:
    """Fail early, naming where punkt was looked for, when its English data is missing."""
    _import_nltk_lean()
    if _punkt(nltk_data) is None:
        raise FileNotFoundError(
            f"NLTK punkt_tab English data not found (looked in --nltk_data={nltk_data!r} and "
            f"NLTK_DATA={os.environ.get('NLTK_DATA')!r}). Pass --nltk_data DIR or set NLTK_DATA to a folder "
            "holding tokenizers/punkt_tab/english (e.g. ../shared/data/nltk_data), or run: "
            "python -m nltk.downloader punkt_tab"
        )


def _sentence_spans(line: str, nltk_data: str | None) -> list[tuple[int, int]]:
    punkt = _stdlib_punkt(nltk_data)
    if punkt is None:
        require_punkt(nltk_data)
    return list(punkt.span_tokenize(line))


def _join_split_anchors(spans: list[tuple[int, int]], anchors: Sequence[Anchor], counts: Counter) -> list[tuple[int, int]]:
    """Merge consecutive sentence spans that an anchor crosses."""
    if len(spans) < 2 or not anchors:
        return spans
    starts = [s for s, _ in spans]
    merged = list(spans)
    for a_start, a_end, _ in anchors:
        first = bisect.bisect_right(starts, a_start) - 1
        last = bisect.bisect_right(starts, a_end - 1) - 1
        if first >= 0 and last > first and merged[first] is not None:
            end = merged[last][1] if merged[last] is not None else max(e for s, e in spans[first:last + 1])
            merged[first] = (merged[first][0], max(end, spans[last][1]))
            for i in range(first + 1, last + 1):
                merged[i] = None
            counts["sentences_joined"] += last - first
    return [span for span in merged if span is not None]


def anchor_sentences(
    text: str, anchors: Sequence[Anchor], *, nltk_data: str | None = None, counts: Counter | None = None,
    keep: Callable[[Sequence[Anchor]], bool] | None = None,
) -> list[AnchoredSentence]:
    """Sentences of ``text`` as words, with the anchors as word spans (see the module docstring).

    A sentence's ``number`` is ``line x LINE_STRIDE + its place in the line`` (lines of ``text``
    counted from 0): it depends on its own line only. ``keep`` (given anchors, before any
    splitting) leaves the other sentences out: a line whose anchors ``keep`` rejects is neither
    split into sentences nor into words, and in the lines it accepts, a sentence it rejects is not
    split into words (the two costly steps). The NER-BERT builder keeps only what holds a typed
    anchor; the sentences kept have the words, spans and numbers they have without ``keep``.
    """
    counts = counts if counts is not None else Counter()
    anchors = sorted(anchors)
    out: list[AnchoredSentence] = []
    line_start = 0
    anchor_at = 0
    for line_number, line in enumerate(text.split("\n")):
        line_end = line_start + len(line)
        # the anchors on this line (wikitext_to_text never lets an anchor span a line break
        # except through its own text; such an anchor is clipped to the line)
        while anchor_at < len(anchors) and anchors[anchor_at][1] <= line_start:
            anchor_at += 1
        line_anchors = []
        j = anchor_at
        while j < len(anchors) and anchors[j][0] < line_end:
            s, e, target = anchors[j]
            line_anchors.append((max(s, line_start) - line_start, min(e, line_end) - line_start, target))
            j += 1
        if line.strip() and (keep is None or keep(line_anchors)):
            spans = _join_split_anchors(_sentence_spans(line, nltk_data), line_anchors, counts)
            number = line_number * LINE_STRIDE
            for s_start, s_end in spans:
                inside = [a for a in line_anchors if a[0] < s_end and a[1] > s_start]
                if keep is not None and not keep(inside):
                    # a span of text always holds words (punkt spans are stripped, non-empty): it takes a number
                    number += bool(line[s_start:s_end].strip())
                    continue
                words = list(_words_of(line[s_start:s_end], s_start))
                if words:
                    sentence = _with_spans(words, inside, counts)
                    sentence.number = number
                    number += 1
                    out.append(sentence)
        line_start = line_end + 1
    return out


def _with_spans(words: list[tuple[str, int, int]], anchors: list[Anchor], counts: Counter) -> AnchoredSentence:
    starts = [w[1] for w in words]
    ends = [w[2] for w in words]
    owner = [-1] * len(words)
    spans: list[WordSpan] = []
    for a_start, a_end, target in anchors:
        first = bisect.bisect_right(ends, a_start)       # first word ending after the anchor starts
        last = bisect.bisect_left(starts, a_end) - 1     # last word starting before the anchor ends
        if first > last:
            counts["anchors_without_words"] += 1
            continue
        if any(owner[i] >= 0 for i in range(first, last + 1)):
            counts["overlapping_anchors"] += 1
            continue
        if starts[first] < a_start or ends[last] > a_end:
            counts["boundary_inside_word"] += 1
        for i in range(first, last + 1):
            owner[i] = len(spans)
        spans.append((first, last + 1, target))
    counts["anchors"] += len(spans)
    return AnchoredSentence([w[0] for w in words], spans)


def bio_tags(length: int, spans: Sequence[tuple[int, int, str]]) -> list[str]:
    """IOB2 tags of a sentence of ``length`` words from ``(first, end, category)`` spans."""
    tags = ["O"] * length
    for first, end, category in spans:
        tags[first] = f"B-{category}"
        for i in range(first + 1, end):
            tags[i] = f"I-{category}"
    return tags
