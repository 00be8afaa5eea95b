"""Word-level token classification on top of sub-word tokenizers, without losing a word.

CrossNER data are word lists with one tag per word; models see sub-words. This module
bridges the two for any fast tokenizer (WordPiece, byte-level BPE with
``add_prefix_space=True``, SentencePiece/Unigram) through ``word_ids()``:

- :func:`tokenize_and_align` (for ``Dataset.map(batched=True)``) labels the first
  sub-word of every word and gives the other sub-words ``-100`` (or, with
  ``label_all_subwords=True``, the word's tag with ``B-x`` turned into ``I-x``).
- A sentence longer than the model's maximum length is cut into overlapping windows
  that start at word boundaries; each window becomes its own row, with
  ``example_index``/``window_index`` columns to find its sentence again. Each word is
  *owned* by the window where it lies furthest from a window edge (ties: the earlier
  window), and only its owner labels it, so overlaps neither double-count nor drop words.
- :func:`stitch_word_predictions` turns per-window outputs back into exactly one
  prediction per word, picking each word's owner window by the same rule.
- :func:`prepare_split` turns a labeled split into the rows the trainers consume.

Running a model over words (:func:`crossner_hf.inference.predict.predict_tags`) builds on these.

Words whose tokenization is empty (zero-width space ``'\\u200b'``, ``'\\x00'``,
``'\\ufeff'``, a lone soft hyphen, an empty string...) would otherwise get no position and
no prediction. They are replaced by the tokenizer's unknown token before tokenizing,
so they occupy one position, are labelled with their gold tag and receive a prediction
like any other word; the model sees ``[UNK]``, which is what it would see for an
unknown symbol anyway. Input lists are never modified.

Example:
    >>> import tempfile
    >>> from transformers import AutoTokenizer
    >>> from crossner_hf.testing import make_tiny_bert
    >>> tok = AutoTokenizer.from_pretrained(make_tiny_bert(tempfile.mkdtemp(), ["senate"]))
    >>> out = tokenize_and_align({"tokens": [["The", "senate", "\\u200b"]], "ner_tags": [[0, 1, 0]]}, tok)
    >>> tok.convert_ids_to_tokens(out["input_ids"][0])
    ['[CLS]', 't', '##h', '##e', 'senate', '[UNK]', '[SEP]']
    >>> out["labels"][0], out["word_ids"][0]
    ([-100, 0, -100, -100, 1, 0, -100], [-1, 0, 0, 0, 1, 2, -1])
"""

from __future__ import annotations

import functools
import logging
import math
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datasets import Dataset
    from transformers import PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

IGNORE_INDEX = -100
"""Label of positions the loss and the metrics skip (specials, non-first sub-words)."""

SPECIAL_WORD_ID = -1
"""``word_ids`` value of special tokens (``-1`` rather than ``None`` keeps the Arrow column integer)."""

_SANE_MAX_LENGTH = 1_000_000  # tokenizers without a known limit report ~1e30


# ----------------------------------------------------------------------------- helpers


def resolve_max_length(
    tokenizer: PreTrainedTokenizerBase, max_length: int | None = None, model: Any = None
) -> int:
    """The window length in tokens (special tokens included).

    ``max_length`` if given; else the tokenizer's ``model_max_length`` when it is a real
    limit; else the model's ``max_position_embeddings`` (minus RoBERTa's 2 offset
    positions); else 512 with a warning.
    """
    if max_length is not None:
        return int(max_length)
    limit = getattr(tokenizer, "model_max_length", None)
    if limit is not None and limit < _SANE_MAX_LENGTH:
        return int(limit)
    config = getattr(model, "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if positions:
        # RoBERTa-style models reserve padding_idx + 1 position ids.
        offset = 2 if "roberta" in str(getattr(config, "model_type", "")) else 0
        return int(positions) - offset
    logger.warning(
        "Tokenizer %s states no maximum length; using 512 tokens per window.", type(tokenizer).__name__
    )
    return 512


def _special_template(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """Special-token ids the tokenizer puts before and after a single sequence."""
    enc = tokenizer([["a"]], is_split_into_words=True, add_special_tokens=True)
    ids, wids = enc["input_ids"][0], enc.word_ids(0)
    content = [i for i, w in enumerate(wids) if w is not None]
    if not content:
        raise ValueError(
            f"Tokenizer {type(tokenizer).__name__} gives no token for the word 'a'; it cannot be used "
            "for word-level token classification."
        )
    return list(ids[: content[0]]), list(ids[content[-1] + 1 :])


def _substitute_word(tokenizer: PreTrainedTokenizerBase) -> str:
    """The stand-in for words that tokenize to nothing: the unknown token when it has one."""
    for candidate in (tokenizer.unk_token, "-"):
        if (
            candidate
            and tokenizer([[candidate]], is_split_into_words=True, add_special_tokens=False)["input_ids"][0]
        ):
            return candidate
    raise ValueError(f"Tokenizer {type(tokenizer).__name__} has no usable stand-in for empty words.")


def _encode_words(
    tokenizer: PreTrainedTokenizerBase, sentences: Sequence[Sequence[str]]
) -> list[tuple[list[int], list[int]]]:
    """Content ids and word ids (no specials) of each sentence; every word gets >= 1 token."""
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            f"Tokenizer {type(tokenizer).__name__} is not a fast (Rust) tokenizer, so it has no word_ids(); "
            "load it with AutoTokenizer.from_pretrained(..., use_fast=True)."
        )
    out: list[tuple[list[int], list[int]]] = [([], []) for _ in sentences]
    todo = [i for i, s in enumerate(sentences) if len(s)]
    if not todo:
        return out
    # verbose=False: full sentences may exceed model_max_length here; windows come later.
    enc = tokenizer(
        [list(sentences[i]) for i in todo], is_split_into_words=True, add_special_tokens=False, verbose=False
    )
    redo: list[int] = []
    for row, i in enumerate(todo):
        wids = enc.word_ids(row)
        out[i] = (list(enc["input_ids"][row]), list(wids))
        if len(set(wids)) != len(sentences[i]):
            redo.append(i)
    if redo:
        sub = _substitute_word(tokenizer)
        fixed = []
        for i in redo:
            covered = set(out[i][1])
            fixed.append([w if j in covered else sub for j, w in enumerate(sentences[i])])
            logger.debug(
                "Sentence %d: %d word(s) gave no sub-word; using %r for them.",
                i,
                len(sentences[i]) - len(covered),
                sub,
            )
        enc = tokenizer(fixed, is_split_into_words=True, add_special_tokens=False, verbose=False)
        for row, i in enumerate(redo):
            out[i] = (list(enc["input_ids"][row]), list(enc.word_ids(row)))
            if len(set(out[i][1])) != len(sentences[i]):
                raise ValueError(
                    f"Sentence {i}: some words still give no sub-word after substituting {sub!r}."
                )
    return out


def _plan_windows(
    word_start: list[int], n_tokens: int, budget: int, stride: int
) -> list[tuple[int, int, int, int]]:
    """Word-aligned windows ``(first_word, end_word, first_token, end_token)`` of <= ``budget`` tokens.

    Consecutive windows share at most ``stride`` tokens: the next window starts at the first
    word beginning at or after ``end_token - stride`` (and always after the current start).
    """
    n_words = len(word_start)
    if n_tokens <= budget:
        return [(0, n_words, 0, n_tokens)]
    word_end = word_start[1:] + [n_tokens]
    windows = []
    w0 = 0
    while True:
        t0 = word_start[w0]
        w1 = bisect_right(word_end, t0 + budget, lo=w0)
        if w1 == w0:  # a single word longer than a window: keep its first sub-words
            w1, t1 = w0 + 1, t0 + budget
            logger.warning(
                "Word %d has %d sub-words, more than a window holds (%d); truncated.",
                w0,
                word_end[w0] - t0,
                budget,
            )
        else:
            t1 = word_end[w1 - 1]
        windows.append((w0, w1, t0, t1))
        if w1 >= n_words:
            return windows
        w0 = bisect_left(word_start, t1 - stride, lo=w0 + 1, hi=w1)


def _owners(
    word_ids_per_window: Sequence[Sequence[int | None]], windows: Sequence[int], n_words: int
) -> list[tuple[int, int]]:
    """For each word of one sentence: ``(window, position)`` of the window where it is most central.

    ``windows`` are the row numbers of that sentence's windows in window order. A word's
    distance to an edge is the number of tokens between it and the window's first/last
    content token; a window edge at the sentence's start or end is no edge. Ties go to
    the earlier window.
    """
    if len(windows) == 1:  # most sentences: every word's place is its first sub-word in the one window
        row = windows[0]
        first_pos: dict[int, int] = {}
        for pos, w in enumerate(word_ids_per_window[row]):
            if w is not None and w >= 0 and w not in first_pos:
                first_pos[w] = pos
        if len(first_pos) == n_words and all(w in first_pos for w in range(n_words)):
            return [(row, first_pos[w]) for w in range(n_words)]
    best: list[tuple[float, int, int] | None] = [None] * n_words
    for row in windows:
        wids = word_ids_per_window[row]
        content = [(pos, w) for pos, w in enumerate(wids) if w is not None and w >= 0]
        if not content:
            continue
        lo, hi = content[0][0], content[-1][0]
        at_start, at_end = content[0][1] == 0, content[-1][1] == n_words - 1
        first: dict[int, int] = {}
        last: dict[int, int] = {}
        for pos, w in content:
            first.setdefault(w, pos)
            last[w] = pos
        for w, pos in first.items():
            left = math.inf if at_start else pos - lo
            right = math.inf if at_end else hi - last[w]
            score = min(left, right)
            if best[w] is None or score > best[w][0]:
                best[w] = (score, row, pos)
    missing = [w for w, b in enumerate(best) if b is None]
    if missing:
        raise ValueError(
            f"Words {missing[:10]} (of {n_words}) appear in no window; windows must cover every word "
            "(tokenize with tokenize_and_align, which never truncates a word away)."
        )
    return [(b[1], b[2]) for b in best]  # type: ignore[index]


def _b_to_i(label_names: Sequence[str]) -> dict[int, int]:
    index = {name: i for i, name in enumerate(label_names)}
    mapping = {}
    for i, name in enumerate(label_names):
        if name.startswith("B-"):
            inside = "I-" + name[2:]
            if inside not in index:
                raise ValueError(
                    f"label_names has {name!r} but no {inside!r}; label_all_subwords=True needs the I- tag "
                    "of every type to tag continuation sub-words."
                )
            mapping[i] = index[inside]
    return mapping


# ----------------------------------------------------------------------------- public API


def tokenize_and_align(
    examples: Mapping[str, Sequence[Any]],
    tokenizer: PreTrainedTokenizerBase,
    *,
    max_length: int | None = None,
    stride: int = 32,
    label_all_subwords: bool = False,
    label_names: Sequence[str] | None = None,
    indices: Sequence[int] | None = None,
) -> dict[str, list[Any]]:
    """Tokenize a batch of ``tokens`` (and ``ner_tags`` if present) into model rows.

    Returns columns ``input_ids``, ``attention_mask`` (and ``token_type_ids`` if the
    tokenizer uses them), ``labels`` (only when ``ner_tags`` is given), ``word_ids``
    (``-1`` for special tokens), ``example_index`` and ``window_index``. A sentence
    longer than ``max_length`` tokens (default: :func:`resolve_max_length`) yields several
    rows whose windows overlap by at most ``stride`` tokens, so ``Dataset.map`` needs
    ``remove_columns`` (:func:`tokenize_dataset` does it). ``example_index`` is
    ``indices[i]`` when given (``map(..., with_indices=True)``), else the row's position
    in ``examples``.

    ``ner_tags`` may be ids or tag names (names need ``label_names``). With
    ``label_all_subwords=True`` continuation sub-words get the word's tag, ``B-x``
    turned into ``I-x`` (needs ``label_names``). Every word is labelled in exactly one
    window, its owner (see the module docstring). Empty sentences yield no row.
    """
    if "tokens" not in examples:
        raise ValueError(f"examples needs a 'tokens' column of word lists; it has {sorted(examples)}.")
    sentences = examples["tokens"]
    tags = examples.get("ner_tags")
    if label_all_subwords and label_names is None:
        raise ValueError("label_all_subwords=True needs label_names (to map each B-x id to its I-x id).")
    b_to_i = _b_to_i(label_names) if label_all_subwords and label_names is not None else {}
    name_to_id = {n: i for i, n in enumerate(label_names)} if label_names is not None else None
    length = resolve_max_length(tokenizer, max_length)
    prefix, suffix = _special_template(tokenizer)
    budget = length - len(prefix) - len(suffix)
    if budget < 1:
        raise ValueError(
            f"max_length={length} leaves no room for words after {len(prefix) + len(suffix)} special tokens."
        )
    if not 0 <= stride < budget:
        raise ValueError(
            f"stride={stride} must be in [0, {budget}) for max_length={length} "
            f"({len(prefix) + len(suffix)} special tokens); lower stride or raise max_length."
        )
    with_types = "token_type_ids" in getattr(tokenizer, "model_input_names", ())
    out: dict[str, list[Any]] = {
        k: [] for k in ("input_ids", "attention_mask", "word_ids", "example_index", "window_index")
    }
    if with_types:
        out["token_type_ids"] = []
    if tags is not None:
        out["labels"] = []

    for i, (ids, wids) in enumerate(_encode_words(tokenizer, sentences)):
        n_words = len(sentences[i])
        if n_words == 0:
            continue
        word_tags: list[int] = []
        if tags is not None:
            if len(tags[i]) != n_words:
                raise ValueError(
                    f"Example {i}: {n_words} tokens but {len(tags[i])} ner_tags; they must pair up."
                )
            for t in tags[i]:
                if isinstance(t, str):
                    if name_to_id is None or t not in name_to_id:
                        raise ValueError(
                            f"Example {i}: tag {t!r} is a name; pass label_names that contain it."
                        )
                    t = name_to_id[t]
                word_tags.append(int(t))
        word_start = [0] * n_words
        for pos in range(len(wids) - 1, -1, -1):
            word_start[wids[pos]] = pos
        plan = _plan_windows(word_start, len(ids), budget, stride)
        row0 = len(out["input_ids"])
        for k, (_, _, t0, t1) in enumerate(plan):
            out["input_ids"].append(prefix + ids[t0:t1] + suffix)
            out["word_ids"].append(
                [SPECIAL_WORD_ID] * len(prefix) + wids[t0:t1] + [SPECIAL_WORD_ID] * len(suffix)
            )
            out["attention_mask"].append([1] * (t1 - t0 + len(prefix) + len(suffix)))
            out["example_index"].append(int(indices[i]) if indices is not None else i)
            out["window_index"].append(k)
            if with_types:
                out["token_type_ids"].append([0] * (t1 - t0 + len(prefix) + len(suffix)))
        if tags is None:
            continue
        rows = list(range(row0, len(out["input_ids"])))
        owner = _owners(out["word_ids"], rows, n_words) if len(plan) > 1 else None
        for row in rows:
            labels = [IGNORE_INDEX] * len(out["word_ids"][row])
            prev = None
            for pos, w in enumerate(out["word_ids"][row]):
                if w == SPECIAL_WORD_ID:
                    prev = None
                    continue
                if owner is not None and owner[w][0] != row:
                    prev = w
                    continue
                if w != prev:
                    labels[pos] = word_tags[w]
                elif label_all_subwords:
                    labels[pos] = b_to_i.get(word_tags[w], word_tags[w])
                prev = w
            out["labels"].append(labels)
    return out


def tokenize_dataset(dataset: Dataset, tokenizer: PreTrainedTokenizerBase, **kwargs: Any) -> Dataset:
    """``dataset.map`` of :func:`tokenize_and_align` with global ``example_index`` values.

    The original columns are removed (windows add rows); keyword arguments go to
    :func:`tokenize_and_align`.
    """
    key = _fingerprint(dataset, tokenizer, kwargs)
    return dataset.map(
        _map_batch,
        batched=True,
        with_indices=True,
        remove_columns=dataset.column_names,
        fn_kwargs={"tokenizer": tokenizer, "options": kwargs},
        desc="Tokenizing",
        new_fingerprint=None if key is None else f"{key}-windows",
    )


@functools.lru_cache(maxsize=1)
def _source_hash() -> str:
    """This module's source, hashed once a process: a changed tokenisation rule is a new cache key."""
    from datasets.fingerprint import Hasher

    return Hasher.hash(Path(__file__).read_bytes())


def _fingerprint(dataset: Dataset, tokenizer: PreTrainedTokenizerBase, options: Mapping[str, Any]) -> str | None:
    """The key of a split tokenized by this module: the split's own fingerprint, everything of the tokenizer that
    :func:`tokenize_and_align` reads, the options and this module's source (a changed rule is a new key); ``None``
    for a tokenizer without a ``tokenizers`` backend (``datasets`` then fingerprints it as usual).

    ``datasets`` would fingerprint each step by pickling its arguments: the whole tokenizer for the map (a BERT
    vocabulary is hundreds of thousands of objects), the gold tags and index lists for the columns added after it.
    That took about a tenth of a short training run's time; this key is one hash of the backend's JSON, and names
    the steps' results exactly as well, so ``datasets``' cache files are still reused for the same inputs.
    """
    backend, fingerprint = getattr(tokenizer, "backend_tokenizer", None), getattr(dataset, "_fingerprint", None)
    if backend is None or fingerprint is None:
        return None
    from datasets.fingerprint import Hasher

    return Hasher.hash([_source_hash(), fingerprint, type(tokenizer).__name__, backend.to_str(),
                        tokenizer.model_max_length, tokenizer.all_special_ids, list(tokenizer.model_input_names),
                        tokenizer.padding_side, sorted((k, repr(v)) for k, v in options.items())])


def prepare_split(
    dataset: Dataset,
    tokenizer: PreTrainedTokenizerBase,
    *,
    max_length: int | None = None,
    stride: int = 32,
    label_all_subwords: bool = False,
    for_eval: bool = False,
) -> Dataset:
    """A labeled split as the rows :class:`crossner_hf.training.trainer.CrossNERTrainer` consumes.

    :func:`tokenize_dataset` rows plus ``word_tags`` (the sentence's gold tag ids, on each
    of its windows, for word-level scoring) and ``length`` (tokens, for length grouping).
    Evaluation rows are ordered by sentence length (longest first, a sentence's windows
    kept together and in order) so batches are padded little; training rows keep their
    order (the length-grouped sampler mixes them).
    """
    import numpy as np

    label_names = dataset.features["ner_tags"].feature.names
    options = {"max_length": max_length, "stride": stride, "label_all_subwords": label_all_subwords,
               "label_names": label_names}
    rows = tokenize_dataset(dataset, tokenizer, **options)
    # each step's result follows from the tokenized split's key: named by it, not by hashing the columns' values
    key = _fingerprint(dataset, tokenizer, options)
    steps = {} if key is None else {name: {"new_fingerprint": f"{key}-{name}"} for name in ("tags", "length", "order")}
    example = np.asarray(rows["example_index"], dtype=np.int64)
    tags = _rows(dataset["ner_tags"])
    rows = rows.add_column("word_tags", [tags[i] for i in example.tolist()], **steps.get("tags", {}))
    lengths = np.fromiter((len(ids) for ids in rows["input_ids"]), dtype=np.int64, count=len(rows))
    rows = rows.add_column("length", lengths.tolist(), **steps.get("length", {}))
    if for_eval and len(rows):
        longest = np.zeros(int(example.max()) + 1, dtype=np.int64)
        np.maximum.at(longest, example, lengths)
        window = np.asarray(rows["window_index"], dtype=np.int64)
        # lexsort: the last key is the primary one
        rows = rows.select(np.lexsort((window, example, -longest[example])).tolist(), **steps.get("order", {}))
    return rows


def _map_batch(
    examples: Mapping[str, Sequence[Any]], indices: list[int], tokenizer: Any, options: dict
) -> dict[str, list[Any]]:
    return tokenize_and_align(examples, tokenizer, indices=indices, **options)


def _rows(column: Sequence[Any]) -> Sequence[Any]:
    """A list, tuple or array as it is; anything else (a ``datasets`` Column) read whole into a list."""
    import numpy as np

    return column if isinstance(column, (list, tuple, np.ndarray)) else column[:]


def stitch_word_predictions(
    per_window: Sequence[Any],
    word_ids_per_window: Sequence[Sequence[int | None]],
    example_index: Sequence[int],
    n_words_per_example: Sequence[int],
) -> list[list[Any]]:
    """Exactly one prediction per word from per-window token outputs.

    ``per_window[r]`` holds row ``r``'s per-token outputs (predicted ids, or logit
    vectors), aligned with ``word_ids_per_window[r]`` (``None``/``-1`` for specials;
    right padding beyond it is ignored). ``example_index[r]`` says which example row
    ``r`` belongs to; rows may come in any order (e.g. sorted by length). Each word takes
    the output at its first sub-word in the window where it is most central (ties: the
    window that starts earlier in the sentence). Returns one list per example of
    ``n_words_per_example`` outputs.
    """
    # a datasets Column reads one row per index (a fraction of a millisecond each); its slice reads all at once
    word_ids_per_window, example_index = _rows(word_ids_per_window), _rows(example_index)
    if not len(per_window) == len(word_ids_per_window) == len(example_index):
        raise ValueError(
            f"per_window ({len(per_window)}), word_ids_per_window ({len(word_ids_per_window)}) and "
            f"example_index ({len(example_index)}) must have one entry per window row."
        )
    rows_of: dict[int, list[int]] = {}
    for row, ex in enumerate(example_index):
        ex = int(ex)
        if not 0 <= ex < len(n_words_per_example):
            raise ValueError(f"Row {row}: example_index {ex} is outside 0..{len(n_words_per_example) - 1}.")
        rows_of.setdefault(ex, []).append(row)
    result: list[list[Any]] = []
    for ex, n_words in enumerate(n_words_per_example):
        if n_words == 0:
            result.append([])
            continue
        if ex not in rows_of:
            raise ValueError(f"Example {ex} has {n_words} words but no window row.")
        # Window order, not row order, breaks ties, so rows may come sorted by length.
        rows = sorted(
            rows_of[ex],
            key=lambda r: next((w for w in word_ids_per_window[r] if w is not None and w >= 0), n_words),
        )
        try:
            owners = _owners(word_ids_per_window, rows, n_words)
        except ValueError as err:
            raise ValueError(f"Example {ex}: {err}") from None
        for row in rows_of[ex]:
            if len(per_window[row]) < len(word_ids_per_window[row]):
                raise ValueError(
                    f"Row {row}: {len(per_window[row])} outputs for {len(word_ids_per_window[row])} tokens; "
                    "outputs must cover every token of the window (right padding only)."
                )
        result.append([per_window[row][pos] for row, pos in owners])
    return result
