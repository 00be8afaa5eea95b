"""Unlabeled text corpora for masked-LM pre-training: loading, tokenising, packing.

A corpus is a set of text files with one sentence or paragraph a line (like the released
``politics_integrated.txt``). ``load_text_corpus`` reads them into a ``Dataset`` with a
``text`` column (blank lines dropped); ``tokenize_corpus`` turns it into model inputs,
either

* ``mode="packed"`` (this project's): texts are joined into one token stream with a
  separator between texts and cut into blocks of exactly ``block_size`` tokens, each
  ``[CLS] ... [SEP]``. A text may run on into the next block. Only the last block of each
  packing batch is padded (``attention_mask`` 0), so no text is lost;
* ``mode="release"`` (the CrossNER release's ``TextDataset``): the same blocks, but the
  texts run on with no separator and the partial last block is dropped;
* ``mode="line"``: one example per text, ``[CLS] text [SEP]`` truncated to ``block_size``
  and not padded (the collator pads).

Both give ``input_ids``, ``attention_mask``, ``special_tokens_mask`` (1 on CLS, SEP and
padding, so MLM collators never mask them) and, with a fast tokenizer, ``word_ids``:
a word index per token, -1 on special tokens, numbered from 0 within each example so
whole-word masking can group sub-words. Both steps are ``Dataset.map`` calls, cached by
``datasets`` fingerprints and parallel with ``num_proc``.

Example:
    >>> from transformers import AutoTokenizer
    >>> corpus = load_text_corpus("politics_integrated.txt")          # doctest: +SKIP
    >>> tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")   # doctest: +SKIP
    >>> blocks = tokenize_corpus(corpus, tokenizer, block_size=512)   # doctest: +SKIP
    >>> blocks.column_names                                           # doctest: +SKIP
    ['input_ids', 'attention_mask', 'special_tokens_mask', 'word_ids']
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from datasets import Dataset, load_dataset
from datasets.fingerprint import Hasher

logger = logging.getLogger(__name__)

from crossner_hf.data.tokenization import SPECIAL_WORD_ID as PAD_WORD  # one name for "no word": specials and padding


def load_text_corpus(
    files: str | Path | Sequence[str | Path] | Any,
    *,
    config: str | None = None,
    dataset: bool = False,
    cache_dir: str | None = None,
    num_proc: int | None = None,
) -> Dataset:
    """The one raw-text reader: a ``Dataset`` with a ``text`` column from any of

    - text files (one text a line, UTF-8): a path, a glob, or a list of them; blank and whitespace-only lines are
      dropped, the others kept as they are (without the line break);
    - a dataset folder (``FOLDER`` or ``FOLDER:CONFIG``, as the corpus levels of ``build-corpora`` are named, or
      ``config=``) or a Hub id (``dataset=True``, with ``config=``): its ``train`` split's ``text`` column, or its
      ``tokens`` column joined by spaces (labeled data, labels unused);
    - a ``Dataset`` or ``DatasetDict`` (its ``train`` split) already in memory, read the same way.

    DAPT (the ``dapt`` command's ``--train_file`` / ``--dataset_name`` and :func:`~crossner_hf.training.dapt.
    dapt`'s corpus) and the RNN recipes' raw text (``--target_text``, ``--source_text``) read through
    here. The Arrow copy of files is cached by ``datasets`` (under ``cache_dir`` if given), so a second load of
    the same files is a memory map.
    """
    from datasets import DatasetDict

    if isinstance(files, DatasetDict):
        files = files["train"] if "train" in files else next(iter(files.values()))
    if isinstance(files, Dataset):
        return _text_column(files, "the corpus")
    named = (str(files), config) if dataset and isinstance(files, (str, Path)) else _dataset_source(files, config)
    if named is not None:
        folder, name = named
        try:
            loaded = load_dataset(folder, name, split="train", cache_dir=cache_dir)
        except (FileNotFoundError, ValueError, ConnectionError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ValueError(f"load_text_corpus: {folder}{f':{name}' if name else ''} could not be read as a "
                             f"dataset ({first[:200]}).") from None
        return _text_column(loaded, f"{folder}{f':{name}' if name else ''}")
    paths = [files] if isinstance(files, (str, Path)) else list(files)
    if not paths:
        raise ValueError("load_text_corpus got no files: pass a path or a list of paths.")
    resolved: list[str] = []
    for path in map(str, paths):
        if glob.has_magic(path):
            found = sorted(glob.glob(path))
            if not found:
                raise ValueError(f"load_text_corpus: the pattern {path!r} matches no file.")
            resolved.extend(found)
        elif not Path(path).is_file():
            raise ValueError(f"load_text_corpus: text file {path} not found; check the path.")
        else:
            resolved.append(path)
    lines = load_dataset("text", data_files=resolved, split="train", cache_dir=cache_dir)
    kept = lines.filter(
        lambda texts: [bool(t.strip()) for t in texts],
        input_columns="text",
        batched=True,
        num_proc=num_proc,
        desc="Dropping blank lines",
    )
    logger.info(
        "Loaded %d texts from %d file(s) (%d blank lines dropped).",
        len(kept), len(resolved), len(lines) - len(kept),
    )
    if len(kept) == 0:  # else a corpus builder or DAPT fails later, far from the empty file
        raise ValueError(f"load_text_corpus: {', '.join(resolved)} hold(s) no text ({len(lines)} blank line(s)); "
                         "give the domain's raw text, one text a line.")
    return kept


def _dataset_source(source: Any, config: str | None) -> tuple[str, str | None] | None:
    """``(folder or Hub id, config)`` when ``source`` names a dataset rather than text files, else ``None``."""
    if not isinstance(source, (str, Path)):
        return None
    spec = str(source)
    if Path(spec).is_file() or glob.has_magic(spec):
        return None
    folder, colon, name = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if colon and Path(folder).is_dir():
        return folder, name or config
    if Path(spec).is_dir():
        return spec, config
    return None


def _text_column(dataset: Dataset, where: str) -> Dataset:
    """``dataset`` with its texts in ``text``: the column itself, or ``tokens`` joined by spaces."""
    if "text" in dataset.column_names:
        return dataset
    if "tokens" in dataset.column_names:
        return dataset.map(lambda row: {"text": " ".join(row["tokens"])}, desc="Joining words into texts")
    raise ValueError(f"{where} has the columns {dataset.column_names}; it needs a 'text' column (or 'tokens'): "
                     "Dataset.rename_column(name, 'text').")


def _special_ids(tokenizer: Any) -> tuple[int, int, int | None]:
    cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    sep_id = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    if cls_id is None or sep_id is None:
        raise ValueError(
            f"tokenize_corpus: tokenizer {type(tokenizer).__name__} has no CLS/BOS or SEP/EOS "
            "token, so blocks cannot be framed; use a BERT-style tokenizer or add those tokens."
        )
    return cls_id, sep_id, tokenizer.pad_token_id


def _tokenizer_key(tokenizer: Any) -> str:
    """A cache key for the tokenizer that ignores its mutable truncation/padding state."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return Hasher.hash(tokenizer)
    state = json.loads(backend.to_str())
    state.pop("truncation", None)
    state.pop("padding", None)
    blob = json.dumps(state, sort_keys=True) + repr(_special_ids(tokenizer))
    return hashlib.sha256(blob.encode()).hexdigest()


def pack_sequences(
    sequences: Sequence[Sequence[int]],
    *,
    block_size: int,
    cls_id: int,
    sep_id: int,
    pad_id: int | None,
    word_ids: Sequence[Sequence[int]] | None = None,
    release: bool = False,
) -> dict[str, list[list[int]]]:
    """Pack token sequences (no special tokens) into ``[CLS] ... [SEP]`` blocks of ``block_size``.

    ``release=True`` packs as the CrossNER release's ``TextDataset`` (transformers 3.0.2): the texts
    run on with no separator between them and the last, partial block is dropped.

    Texts are separated by ``sep_id``. Only the last block is padded (with ``pad_id``);
    every other block is full, so a separator can be a block's last content token
    (``... [SEP] [SEP]``) but never its first (no ``[CLS] [SEP]``). ``word_ids``
    (per-text word indices) are renumbered from 0 in each block.

    Example:
        >>> out = pack_sequences([[7, 8, 9], [5]], block_size=6, cls_id=1, sep_id=2, pad_id=0)
        >>> out["input_ids"], out["special_tokens_mask"][1]
        ([[1, 7, 8, 9, 2, 2], [1, 5, 2, 0, 0, 0]], [1, 0, 1, 1, 1, 1])
    """
    capacity = block_size - 2
    if capacity < 1:
        raise ValueError(f"pack_sequences: block_size={block_size} leaves no room for text; use at least 3.")
    blocks: dict[str, list[list[int]]] = {"input_ids": [], "attention_mask": [], "special_tokens_mask": []}
    if word_ids is not None:
        blocks["word_ids"] = []
    buf: list[int] = []
    buf_special: list[int] = []
    buf_words: list[int] = []

    def flush() -> None:
        pad = block_size - len(buf) - 2
        if pad and pad_id is None:
            raise ValueError(
                "pack_sequences: the last block needs padding but the tokenizer has no pad "
                "token; set tokenizer.pad_token first."
            )
        blocks["input_ids"].append([cls_id, *buf, sep_id] + [pad_id] * pad)  # type: ignore[list-item]
        blocks["attention_mask"].append([1] * (len(buf) + 2) + [0] * pad)
        blocks["special_tokens_mask"].append([1, *buf_special, 1] + [1] * pad)
        if word_ids is not None:
            base = next((w for w in buf_words if w != PAD_WORD), 0)
            local = [w - base if w != PAD_WORD else PAD_WORD for w in buf_words]
            blocks["word_ids"].append([PAD_WORD, *local, PAD_WORD] + [PAD_WORD] * pad)
        buf.clear()
        buf_special.clear()
        buf_words.clear()

    word_offset = 0
    for number, ids in enumerate(sequences):
        if not ids:
            continue
        if buf and not release:
            # buf is never full here (full buffers are flushed at once), so the separator fits.
            buf.append(sep_id)
            buf_special.append(1)
            buf_words.append(PAD_WORD)
            if len(buf) == capacity:
                flush()
        words: Sequence[int] = ()
        if word_ids is not None:
            local_words = word_ids[number]
            # Stream-wide word numbers keep words of different texts apart in one block.
            words = [word_offset + w if w != PAD_WORD else PAD_WORD for w in local_words]
            word_offset += max(local_words, default=PAD_WORD) + 1
        pos = 0
        while pos < len(ids):
            take = min(capacity - len(buf), len(ids) - pos)
            buf.extend(ids[pos : pos + take])
            buf_special.extend([0] * take)
            if word_ids is not None:
                buf_words.extend(words[pos : pos + take])
            pos += take
            if len(buf) == capacity:
                flush()
    if buf and not release:
        flush()
    return blocks


def tokenize_corpus(
    dataset: Dataset,
    tokenizer: Any,
    *,
    mode: Literal["packed", "release", "line"] = "packed",
    block_size: int = 512,
    num_proc: int | None = None,
    text_column: str = "text",
    return_word_ids: bool = True,
    batch_size: int = 1000,
    pack_batch_size: int = 10_000,
) -> Dataset:
    """Tokenise a text corpus for masked-LM training; see the module doc for the two modes.

    Args:
        dataset: a ``Dataset`` with a ``text_column`` (e.g. from ``load_text_corpus``).
        tokenizer: a Hugging Face tokenizer with CLS/SEP (or BOS/EOS) and, for padding
            the last packed block, a pad token.
        mode: ``"packed"`` blocks of exactly ``block_size`` tokens, or ``"line"``.
        block_size: block length (packed) or maximum length (line); at most the
            tokenizer's ``model_max_length``.
        num_proc: processes for the ``map`` calls.
        return_word_ids: add ``word_ids`` (needs a fast tokenizer).
        batch_size: texts per tokenisation batch.
        pack_batch_size: tokenised texts per packing batch; each packing batch pads its
            last block, so larger batches waste fewer positions.
    """
    if mode not in ("packed", "release", "line"):
        raise ValueError(f"tokenize_corpus: mode={mode!r} is not 'packed', 'release' or 'line' (release: packed as "
                         "the CrossNER release, no separator between texts, the partial last block dropped).")
    if text_column not in dataset.column_names:
        raise ValueError(
            f"tokenize_corpus: the dataset has columns {dataset.column_names} but no "
            f"{text_column!r}; pass text_column= or load it with load_text_corpus."
        )
    if block_size < 3:
        raise ValueError(f"tokenize_corpus: block_size={block_size} must be at least 3 (CLS, a token, SEP).")
    max_len = getattr(tokenizer, "model_max_length", None)
    if isinstance(max_len, int) and block_size > max_len:
        raise ValueError(
            f"tokenize_corpus: block_size={block_size} exceeds the tokenizer's model_max_length "
            f"{max_len}; the model's position embeddings cannot take it. Lower block_size."
        )
    if return_word_ids and not getattr(tokenizer, "is_fast", False):
        raise ValueError(
            "tokenize_corpus: word_ids need a fast tokenizer; load it with use_fast=True "
            "or pass return_word_ids=False."
        )
    cls_id, sep_id, pad_id = _special_ids(tokenizer)
    key = _tokenizer_key(tokenizer)
    if mode == "line":
        return _tokenize_lines(dataset, tokenizer, block_size, num_proc, text_column, return_word_ids, batch_size, key)

    def tokenize(batch: dict[str, list]) -> dict[str, list]:
        enc = tokenizer(batch[text_column], add_special_tokens=False)
        out: dict[str, list] = {"ids": enc["input_ids"]}
        if return_word_ids:
            out["words"] = [
                [PAD_WORD if w is None else w for w in enc.word_ids(i)] for i in range(len(batch[text_column]))
            ]
        return out

    tokenized = _map_batches(dataset, tokenize, batch_size, num_proc,
                             ["tokenize_corpus/ids/v1", key, text_column, return_word_ids], "Tokenising")

    def pack(batch: dict[str, list]) -> dict[str, list]:
        return pack_sequences(
            batch["ids"],
            word_ids=batch["words"] if return_word_ids else None,
            block_size=block_size,
            cls_id=cls_id,
            sep_id=sep_id,
            pad_id=pad_id,
            release=mode == "release",
        )

    packed = _map_batches(tokenized, pack, pack_batch_size, num_proc,
                          ["tokenize_corpus/pack/v1", block_size, pack_batch_size, mode],
                          f"Packing into blocks of {block_size}")
    logger.info("Packed %d texts into %d blocks of %d tokens.", len(dataset), len(packed), block_size)
    return packed


def _tokenize_lines(
    dataset: Dataset,
    tokenizer: Any,
    block_size: int,
    num_proc: int | None,
    text_column: str,
    return_word_ids: bool,
    batch_size: int,
    key: str,
) -> Dataset:
    def tokenize(batch: dict[str, list]) -> dict[str, list]:
        enc = tokenizer(
            batch[text_column],
            truncation=True,
            max_length=block_size,
            return_special_tokens_mask=True,
            return_attention_mask=True,
        )
        # Texts with no token (e.g. only control characters) would be bare [CLS] [SEP].
        keep = [i for i, mask in enumerate(enc["special_tokens_mask"]) if 0 in mask]
        out = {name: [enc[name][i] for i in keep] for name in ("input_ids", "attention_mask", "special_tokens_mask")}
        if return_word_ids:
            out["word_ids"] = [[PAD_WORD if w is None else w for w in enc.word_ids(i)] for i in keep]
        return out

    lines = _map_batches(dataset, tokenize, batch_size, num_proc,
                         ["tokenize_corpus/line/v1", key, text_column, block_size, return_word_ids],
                         "Tokenising line by line")
    logger.info("Tokenised %d texts into %d examples (max %d tokens).", len(dataset), len(lines), block_size)
    return lines


def _map_batches(dataset: Dataset, fn: Any, batch_size: int, num_proc: int | None, key: list[Any], desc: str) -> Dataset:
    """``dataset.map(fn)`` in batches, replacing every column, cached under ``key`` + the input's fingerprint.

    The fingerprint is ``Dataset._fingerprint``: datasets has no public accessor, and a hash of the
    function alone would miss the tokenizer and block size (pinned by the cache tests).
    """
    return dataset.map(fn, batched=True, batch_size=batch_size, remove_columns=dataset.column_names,
                       num_proc=num_proc, new_fingerprint=Hasher.hash([*key, dataset._fingerprint]), desc=desc)
