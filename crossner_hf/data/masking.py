"""Masked-LM collators for domain-adaptive pre-training (DAPT).

Four ways of choosing which tokens a masked-LM predicts, all as
``transformers.DataCollatorForLanguageModeling`` subclasses that a ``Trainer`` takes as
``data_collator``:

==================  ===========================================  =====================
name                collator                                     chooses
==================  ===========================================  =====================
``token``           :class:`DataCollatorForTokenMasking`         tokens, Bernoulli(p)
``span-adjacent``   :class:`DataCollatorForSpanAdjacentMasking`  CrossNER span masking
``whole-word``      :class:`DataCollatorForWholeWordMasking`     words, Bernoulli(p)
``span-geometric``  :class:`DataCollatorForSpanGeometricMasking`  SpanBERT spans
==================  ===========================================  =====================

Rules shared by all four:

* Never masked: padding (``pad_token_id`` or ``attention_mask == 0``), positions flagged
  by a ``special_tokens_mask`` feature, and any token whose id is one of the tokenizer's
  special ids except ``unk_token_id`` ([UNK] stands for a real word; BERT masked it too).
  A special token in the middle of a row (packed texts, ``[SEP]`` between sentences)
  splits the row into stretches that are masked as if they were rows of their own.
* The chosen positions get labels (``-100`` elsewhere) and the usual 80% ``[MASK]`` /
  10% random token / 10% unchanged replacement (``mask_replace_prob`` and
  ``random_replace_prob``, as in transformers).
* Every random draw goes through the collator's generator: with ``seed`` set, the same
  batch comes out for the same input (per DataLoader worker: seed + worker id, the
  machinery of the parent class); without it the global torch RNG is used.

Word boundaries (whole-word and span-geometric) come from a ``word_ids`` feature
(``encoding.word_ids()``, ``None``/-1 for special tokens), else from ``offset_mapping``
(a token whose start offset equals the previous token's end continues its word). Neither
uses the WordPiece ``##`` prefix, so byte-level BPE tokenizers work. Note that
``Trainer`` drops dataset columns its model does not take: pass
``TrainingArguments(remove_unused_columns=False)`` to keep ``word_ids``.

Example:
    >>> import tempfile
    >>> from transformers import AutoTokenizer
    >>> from crossner_hf.testing import make_tiny_bert
    >>> tok = AutoTokenizer.from_pretrained(make_tiny_bert(tempfile.mkdtemp(), ["the", "vote"]))
    >>> collator = make_mlm_collator("span-adjacent", tok, mlm_probability=0.2, seed=0)
    >>> batch = collator([tok("the vote"), tok("the vote the vote")])
    >>> sorted(batch), tuple(batch["labels"].shape)
    (['attention_mask', 'input_ids', 'labels', 'token_type_ids'], (2, 6))
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase

__all__ = [
    "MASKING_CHOICES",
    "DataCollatorForSpanAdjacentMasking",
    "DataCollatorForSpanGeometricMasking",
    "DataCollatorForTokenMasking",
    "DataCollatorForWholeWordMasking",
    "make_mlm_collator",
    "span_adjacent",
]

# Features aligned token by token with input_ids that tokenizer.pad cannot pad.
_ALIGNED_KEYS = ("word_ids", "offset_mapping")


def span_adjacent(mask: torch.Tensor, breaks: torch.Tensor | None = None) -> torch.Tensor:
    """Move each isolated masked position next to the following masked span (CrossNER).

    This is the released CrossNER scan, row by row and left to right with one pending
    position ``r``, computed without a loop over tokens. Its effect, by runs of adjacent
    masked positions: runs of two or more stay; within a chain of consecutive length-1
    runs, the 1st, 3rd, 5th... each move to just before the run that follows them (which
    then takes no further part); a last isolated position with no run after it stays. The
    number of masked positions never changes.

    Args:
        mask: 2-D bool tensor ``(rows, positions)``; rows are independent. Positions that
            must never be masked (special tokens, padding) must already be False.
        breaks: optional bool tensor of the same shape marking positions (special tokens)
            that split a row into stretches scanned as separate rows; they must not be
            masked. With breaks only at the ends of a row the result equals the released
            code's.

    Returns:
        A new bool tensor; ``mask`` is not modified.

    Example:
        >>> def show(s):
        ...     m = torch.tensor([[c == "x" for c in s]])
        ...     return "".join("x" if v else "." for v in span_adjacent(m)[0].tolist())
        >>> show("x....x....x....x"), show("x...xx...x")
        ('....xx........xx', '...xxx...x')
    """
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() != 2:
        raise ValueError(
            "span_adjacent: `mask` must be a 2-D torch.bool tensor (rows, positions), got "
            f"{type(mask).__name__} {getattr(mask, 'dtype', '')} {tuple(getattr(mask, 'shape', ()))}; "
            "convert with mask.bool() and add a batch dimension with mask[None] if needed."
        )
    if breaks is not None:
        if not isinstance(breaks, torch.Tensor) or breaks.dtype != torch.bool or breaks.shape != mask.shape:
            raise ValueError(
                f"span_adjacent: `breaks` must be a torch.bool tensor of shape {tuple(mask.shape)} "
                "like `mask`; pass special_tokens_mask.bool()."
            )
        if bool((mask & breaks).any()):
            raise ValueError(
                "span_adjacent: some break (special) positions are masked; clear them first with "
                "mask & ~breaks."
            )
    out = mask.clone()
    n_rows, n_cols = mask.shape
    if n_cols < 2:
        return out
    prev = torch.zeros_like(mask)
    prev[:, 1:] = mask[:, :-1]
    nxt = torch.zeros_like(mask)
    nxt[:, :-1] = mask[:, 1:]
    # Runs in row-major order: starts and ends pair up one to one.
    rows, starts = (mask & ~prev).nonzero(as_tuple=True)
    ends = (mask & ~nxt).nonzero(as_tuple=True)[1]
    n_runs = rows.numel()
    if n_runs < 2:
        return out
    single = starts == ends
    stretch = rows
    if breaks is not None:
        stretch = rows * (n_cols + 1) + breaks.cumsum(1)[rows, starts]
    next_same = stretch[1:] == stretch[:-1]
    index = torch.arange(n_runs, device=mask.device)
    # The scan state entering a chain of singles is always "none", so the singles at even
    # offsets in the chain are the pending ones and the run right after each takes it.
    follows_single = torch.zeros_like(single)
    follows_single[1:] = single[:-1] & next_same
    chain_head = torch.where(single & ~follows_single, index, torch.zeros_like(index)).cummax(0).values
    pending = single & ((index - chain_head) % 2 == 0)
    moved = (pending[:-1] & next_same).nonzero().squeeze(1)
    out[rows[moved], starts[moved]] = False
    out[rows[moved + 1], starts[moved + 1] - 1] = True
    return out


def _shift_right(x: torch.Tensor, fill: Any) -> torch.Tensor:
    out = torch.full_like(x, fill)
    out[:, 1:] = x[:, :-1]
    return out


def _word_ids_from_offsets(offsets: torch.Tensor, no_mask: torch.Tensor) -> torch.Tensor:
    """Word index per token from ``(rows, positions, 2)`` offsets; -1 where ``no_mask``."""
    continues = (offsets[..., 0] == _shift_right(offsets[..., 1], -1)) & ~_shift_right(no_mask, True)
    new_word = ~no_mask & ~continues
    return torch.where(no_mask, torch.full_like(offsets[..., 0], -1), new_word.long().cumsum(1) - 1)


def _word_starts(word_ids: torch.Tensor | None, maskable: torch.Tensor) -> torch.Tensor:
    """First maskable token of each word; every maskable token when no word ids are known."""
    if word_ids is None:
        return maskable.clone()
    return maskable & (~_shift_right(maskable, False) | (word_ids != _shift_right(word_ids, -1)))


def _last_true_position(flags: torch.Tensor) -> torch.Tensor:
    """Per position, the index of the latest True at or before it (0 if none)."""
    positions = torch.arange(flags.shape[1], device=flags.device).expand_as(flags)
    return torch.where(flags, positions, torch.zeros_like(positions)).cummax(1).values


@dataclass
class _MaskingCollator(DataCollatorForLanguageModeling):
    """Shared collation, validation, special-token handling and 80/10/10 replacement."""

    def __post_init__(self) -> None:
        name = type(self).__name__
        if self.tokenizer is None or not isinstance(self.tokenizer, PreTrainedTokenizerBase):
            raise ValueError(
                f"{name}: `tokenizer` must be a transformers tokenizer, got {type(self.tokenizer).__name__}."
            )
        if self.tokenizer.mask_token is None:
            raise ValueError(
                f"{name}: tokenizer {type(self.tokenizer).__name__} has no mask token, which masked-LM "
                "needs; add one with tokenizer.add_special_tokens({'mask_token': '[MASK]'}) and "
                "model.resize_token_embeddings(len(tokenizer))."
            )
        if not self.mlm:
            raise ValueError(
                f"{name}: mlm=False is not supported; use transformers.DataCollatorForLanguageModeling(mlm=False)."
            )
        if self.whole_word_mask:
            raise ValueError(
                f"{name}: whole_word_mask=True is not supported here; use DataCollatorForWholeWordMasking."
            )
        _check_probability(name, "mlm_probability", self.mlm_probability, open_interval=True)
        _check_probability(name, "mask_replace_prob", self.mask_replace_prob)
        _check_probability(name, "random_replace_prob", self.random_replace_prob)
        if self.mask_replace_prob + self.random_replace_prob > 1:
            raise ValueError(
                f"{name}: mask_replace_prob + random_replace_prob = "
                f"{self.mask_replace_prob + self.random_replace_prob} exceeds 1; lower one of them."
            )
        if self.return_tensors != "pt":
            raise ValueError(f"{name}: return_tensors={self.return_tensors!r} is not supported; use 'pt'.")
        if self.seed is not None and not (_is_int(self.seed) and self.seed >= 0):
            raise ValueError(f"{name}: seed must be a non-negative int or None, got {self.seed!r}.")
        multiple = self.pad_to_multiple_of
        if multiple is not None and not (_is_int(multiple) and multiple > 0):
            raise ValueError(
                f"{name}: pad_to_multiple_of must be a positive int or None, got {self.pad_to_multiple_of!r}."
            )
        super().__post_init__()

    def torch_call(self, examples: Sequence[Any]) -> dict[str, Any]:
        if self.seed is not None and self.generator is None:
            self.create_rng()
        batch, aligned = self._collate(examples)
        special_tokens_mask = batch.pop("special_tokens_mask", None)
        batch["input_ids"], batch["labels"] = self.torch_mask_tokens(
            batch["input_ids"],
            special_tokens_mask=special_tokens_mask,
            offset_mapping=aligned.get("offset_mapping"),
            word_ids=aligned.get("word_ids"),
            attention_mask=batch.get("attention_mask"),
        )
        return batch

    def torch_mask_tokens(
        self,
        inputs: torch.Tensor,
        special_tokens_mask: torch.Tensor | None = None,
        offset_mapping: torch.Tensor | None = None,
        word_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Choose positions with :meth:`_select`, set labels, replace 80/10/10 in place."""
        no_mask = self._unmaskable(inputs, special_tokens_mask, attention_mask)
        if word_ids is None and offset_mapping is not None:
            word_ids = _word_ids_from_offsets(offset_mapping, no_mask)
        masked = self._select(no_mask, word_ids) & ~no_mask
        labels = inputs.clone()
        labels[~masked] = -100
        self._replace(inputs, masked)
        return inputs, labels

    def _select(self, no_mask: torch.Tensor, word_ids: torch.Tensor | None) -> torch.Tensor:
        raise NotImplementedError(f"{type(self).__name__} must implement _select(no_mask, word_ids).")

    def _bernoulli(self, shape: torch.Size, p: float) -> torch.Tensor:
        return torch.bernoulli(torch.full(shape, p), generator=self.generator).bool()

    def _unmaskable(
        self,
        inputs: torch.Tensor,
        special_tokens_mask: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        tok = self.tokenizer
        # all_special_ids holds the pad token too, so this covers padding by id.
        special_ids = [i for i in tok.all_special_ids if i != tok.unk_token_id]
        no_mask = torch.isin(inputs, torch.tensor(special_ids, dtype=inputs.dtype))
        if special_tokens_mask is not None:
            no_mask |= special_tokens_mask.bool()
        if attention_mask is not None:
            no_mask |= attention_mask == 0
        return no_mask

    def _replace(self, inputs: torch.Tensor, masked: torch.Tensor) -> None:
        """80% [MASK] / 10% random / 10% unchanged, drawn as transformers draws them."""
        replaced = self._bernoulli(inputs.shape, self.mask_replace_prob) & masked
        inputs[replaced] = self.tokenizer.mask_token_id
        if self.mask_replace_prob == 1 or self.random_replace_prob == 0:
            return
        scaled = self.random_replace_prob / (1 - self.mask_replace_prob)
        randomized = self._bernoulli(inputs.shape, scaled) & masked & ~replaced
        words = torch.randint(len(self.tokenizer), inputs.shape, dtype=inputs.dtype, generator=self.generator)
        inputs[randomized] = words[randomized]

    def _collate(self, examples: Sequence[Any]) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
        name = type(self).__name__
        if len(examples) == 0:
            raise ValueError(f"{name}: got an empty batch; the DataLoader must yield at least one example.")
        if not isinstance(examples[0], Mapping):
            return {"input_ids": self._stack_ids(list(examples))}, {}
        keys = [k for k in _ALIGNED_KEYS if k in examples[0]]
        features = [{k: v for k, v in ex.items() if k not in _ALIGNED_KEYS} for ex in examples]
        batch = self.tokenizer.pad(features, return_tensors="pt", pad_to_multiple_of=self.pad_to_multiple_of)
        aligned = {}
        for key in keys:
            fill, tail = (-1, ()) if key == "word_ids" else (0, (2,))
            out = torch.full((*batch["input_ids"].shape, *tail), fill, dtype=torch.long)
            for i, ex in enumerate(examples):
                if key not in ex:
                    raise ValueError(f"{name}: example 0 has a {key!r} column but example {i} lacks it.")
                values = [fill if v is None else v for v in _to_list(ex[key])]
                values = torch.as_tensor(values, dtype=torch.long)
                n = len(_to_list(ex["input_ids"]))
                if values.shape != (n, *tail):
                    raise ValueError(
                        f"{name}: example {i} has {key} of shape {tuple(values.shape)} but {n} input_ids; "
                        f"{key} must have one entry per token."
                    )
                if self.tokenizer.padding_side == "left":
                    out[i, out.shape[1] - n :] = values
                else:
                    out[i, :n] = values
            aligned[key] = out
        return batch, aligned

    def _stack_ids(self, examples: list[Any]) -> torch.Tensor:
        rows = [torch.as_tensor(e, dtype=torch.long) for e in examples]
        longest = max(r.shape[0] for r in rows)
        multiple = self.pad_to_multiple_of
        width = longest if multiple is None else -(-longest // multiple) * multiple
        if all(r.shape[0] == width for r in rows):
            return torch.stack(rows)
        if self.tokenizer.pad_token_id is None:
            raise ValueError(
                f"{type(self).__name__}: examples of different lengths need padding but tokenizer "
                f"{type(self.tokenizer).__name__} has no pad token; set tokenizer.pad_token."
            )
        out = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        for i, r in enumerate(rows):
            if self.tokenizer.padding_side == "left":
                out[i, width - r.shape[0] :] = r
            else:
                out[i, : r.shape[0]] = r
        return out


def _to_list(value: Any) -> list[Any]:
    return value.tolist() if hasattr(value, "tolist") else list(value)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_probability(owner: str, field: str, value: Any, *, open_interval: bool = False) -> None:
    ok = _is_real(value)
    if ok:
        ok = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not ok:
        interval = "strictly between 0 and 1" if open_interval else "between 0 and 1"
        raise ValueError(f"{owner}: {field} must be a number {interval}, got {value!r}.")


@dataclass
class DataCollatorForTokenMasking(_MaskingCollator):
    """Standard BERT masking: each maskable token is chosen with probability ``mlm_probability``.

    Same choice as ``transformers.DataCollatorForLanguageModeling``; kept as a subclass so
    all four maskings share one rule for special, padding and [UNK] tokens, the
    ``word_ids``/``offset_mapping`` columns are dropped the same way, and the configuration
    is validated the same way.
    """

    def _select(self, no_mask: torch.Tensor, word_ids: torch.Tensor | None) -> torch.Tensor:
        return self._bernoulli(no_mask.shape, self.mlm_probability)


@dataclass
class DataCollatorForSpanAdjacentMasking(_MaskingCollator):
    """CrossNER span-level masking (Liu et al., AAAI 2021), vectorised.

    The first generator draw is the token-level Bernoulli(``mlm_probability``) mask over the
    whole batch; :func:`span_adjacent` then moves each isolated masked token next to the
    following masked token, within each stretch between special tokens, so most masked
    tokens come in spans of two or three. The count of masked tokens is unchanged.

    The paper states 15%, which is the default here; the released code set 0.2 (in its
    ``main``), so ``mlm_probability=0.2`` reproduces the released runs.
    """

    def _select(self, no_mask: torch.Tensor, word_ids: torch.Tensor | None) -> torch.Tensor:
        initial = self._bernoulli(no_mask.shape, self.mlm_probability) & ~no_mask
        return span_adjacent(initial, breaks=no_mask)


@dataclass
class DataCollatorForWholeWordMasking(_MaskingCollator):
    """Whole-word masking: each word is chosen with probability ``mlm_probability``.

    Words come from a ``word_ids`` feature (preferred, exact for any fast tokenizer) or
    from ``offset_mapping`` (needs trimmed offsets, the default for byte-level BPE; a
    punctuation mark glued to a word joins that word). Every token of a chosen word is
    masked, each then replaced 80/10/10 on its own as in BERT's release.
    """

    def _select(self, no_mask: torch.Tensor, word_ids: torch.Tensor | None) -> torch.Tensor:
        if word_ids is None:
            raise ValueError(
                f"{type(self).__name__}: the batch has neither `word_ids` nor `offset_mapping`; tokenize "
                "with return_offsets_mapping=True or add a word_ids column (encoding.word_ids()), and "
                "keep it with TrainingArguments(remove_unused_columns=False)."
            )
        maskable = ~no_mask & (word_ids >= 0)
        starts = _word_starts(word_ids, maskable)
        chosen = self._bernoulli(no_mask.shape, self.mlm_probability) & starts
        return chosen.gather(1, _last_true_position(starts)) & maskable


@dataclass
class DataCollatorForSpanGeometricMasking(_MaskingCollator):
    """SpanBERT span masking (Joshi et al., 2020).

    Per row, spans are added until ``round(mlm_probability * maskable tokens)`` tokens
    (at least one) are masked: a span starts at the word of a token drawn uniformly among
    the still-unmasked maskable tokens and covers ``length`` words, ``length`` drawn from
    Geometric(``geometric_p``) truncated to ``1..max_span_length`` and renormalised (as in
    SpanBERT: mean 3.8 words at p=0.2), never crossing a special token. The last span stops
    at the word boundary where the budget is reached. Without ``word_ids`` or
    ``offset_mapping`` a word is a token.

    The loop runs over spans (each masks at least one new token, so at most the budget's
    number of rounds), every round vectorised over the whole batch.
    """

    geometric_p: float = 0.2
    max_span_length: int = 10

    def __post_init__(self) -> None:
        name = type(self).__name__
        if not (_is_real(self.geometric_p) and 0 < self.geometric_p <= 1):
            raise ValueError(f"{name}: geometric_p must be a number in (0, 1], got {self.geometric_p!r}.")
        if not (_is_int(self.max_span_length) and self.max_span_length >= 1):
            raise ValueError(f"{name}: max_span_length must be a positive int, got {self.max_span_length!r}.")
        super().__post_init__()

    def span_length_probs(self) -> torch.Tensor:
        """P(length = 1..max_span_length) in words."""
        lengths = torch.arange(self.max_span_length, dtype=torch.float64)
        probs = self.geometric_p * (1 - self.geometric_p) ** lengths
        return (probs / probs.sum()).float()

    def _select(self, no_mask: torch.Tensor, word_ids: torch.Tensor | None) -> torch.Tensor:
        maskable = ~no_mask if word_ids is None else ~no_mask & (word_ids >= 0)
        starts = _word_starts(word_ids, maskable)
        word_start_pos = _last_true_position(starts)
        word_index = starts.long().cumsum(1) - 1
        stretch = no_mask.long().cumsum(1)
        n_maskable = maskable.sum(1)
        budget = (self.mlm_probability * n_maskable).round().long()
        budget = torch.where(n_maskable > 0, budget.clamp(min=1), budget)
        masked = torch.zeros_like(maskable)
        count = torch.zeros_like(budget)
        probs = self.span_length_probs()
        n_rows = maskable.shape[0]
        for _ in range(int(budget.max()) if n_rows else 0):
            need = budget - count
            active = need > 0
            if not bool(active.any()):
                break
            keys = torch.rand(maskable.shape, generator=self.generator).masked_fill_(~maskable | masked, -1.0)
            anchor = keys.argmax(1, keepdim=True)
            lengths = torch.multinomial(probs, n_rows, replacement=True, generator=self.generator)
            lengths = lengths[:, None] + 1
            first_word = word_index.gather(1, anchor)
            span = (
                maskable
                & (word_index >= first_word)
                & (word_index < first_word + lengths)
                & (stretch == stretch.gather(1, anchor))
                & active[:, None]
            )
            new = span & ~masked
            new_before = new.long().cumsum(1) - new.long()
            # Whole words only: a word joins if the budget is not met when it begins.
            take = new & (new_before.gather(1, word_start_pos) < need[:, None])
            masked |= take
            count += take.sum(1)
        return masked


_COLLATORS: dict[str, type[_MaskingCollator]] = {
    "token": DataCollatorForTokenMasking,
    "span-adjacent": DataCollatorForSpanAdjacentMasking,
    "whole-word": DataCollatorForWholeWordMasking,
    "span-geometric": DataCollatorForSpanGeometricMasking,
}

MASKING_CHOICES: tuple[str, ...] = tuple(_COLLATORS)


def make_mlm_collator(
    masking: str,
    tokenizer: PreTrainedTokenizerBase,
    mlm_probability: float = 0.15,
    seed: int | None = None,
    **kwargs: Any,
) -> DataCollatorForLanguageModeling:
    """Build the masked-LM collator named ``masking`` (one of :data:`MASKING_CHOICES`).

    ``kwargs`` go to the collator (``mask_replace_prob``, ``random_replace_prob``,
    ``pad_to_multiple_of``, and for span-geometric ``geometric_p``, ``max_span_length``).

    Example:
        >>> import tempfile
        >>> from transformers import AutoTokenizer
        >>> from crossner_hf.testing import make_tiny_bert
        >>> tok = AutoTokenizer.from_pretrained(make_tiny_bert(tempfile.mkdtemp()))
        >>> type(make_mlm_collator("whole-word", tok)).__name__
        'DataCollatorForWholeWordMasking'
    """
    try:
        cls = _COLLATORS[masking]
    except (KeyError, TypeError):
        raise ValueError(
            f"make_mlm_collator: unknown masking {masking!r}; choose one of {', '.join(MASKING_CHOICES)}."
        ) from None
    return cls(tokenizer=tokenizer, mlm_probability=mlm_probability, seed=seed, **kwargs)
