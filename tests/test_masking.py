"""Tests for crossner_hf.data.masking: the span-adjacent move step against a literal plain-Python
reference, the invariants of the four collators, reproducibility and configuration errors."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
import torch

from crossner_hf.data.masking import (
    MASKING_CHOICES,
    DataCollatorForSpanAdjacentMasking,
    DataCollatorForSpanGeometricMasking,
    DataCollatorForTokenMasking,
    DataCollatorForWholeWordMasking,
    make_mlm_collator,
    span_adjacent,
)

SENTENCES = [
    "the senate voted zqxv on the krumholtz amendment",
    "parliament dissolved after the brexit referendum",
    "xylophonic quarterbacks obfuscate the lib dem manifesto",
    "the liberal democrats won seats in wokingham and bxq",
]


# --- the plain-Python reference: the issue's pseudo-code, literally --------------------


def reference_span_adjacent(row: list[bool]) -> list[bool]:
    mask = list(row)
    r = None
    for j in range(len(mask)):
        if mask[j]:
            if r is None:
                if j > 0 and mask[j - 1]:
                    continue  # inside a run: leave it
                r = j
            else:
                if r == j - 1:
                    r = None  # a run of two or more: leave it
                    continue
                mask[r] = False  # move the isolated mask next to j
                mask[j - 1] = True
                r = None
    return mask


def reference_with_breaks(row: list[bool], breaks: list[bool]) -> list[bool]:
    """Each stretch between break positions scanned as its own row."""
    out = list(row)
    start = 0
    for j in range(len(row) + 1):
        if j == len(row) or breaks[j]:
            out[start:j] = reference_span_adjacent(row[start:j])
            start = j + 1
    return out


def as_text(mask: list[bool]) -> str:
    return "".join("x" if v else "." for v in mask)


def from_text(text: str) -> torch.Tensor:
    return torch.tensor([[c == "x" for c in text]], dtype=torch.bool)


def random_rows(rng: random.Random, n_rows: int, length: int, density: float) -> list[list[bool]]:
    rows = [[rng.random() < density for _ in range(length)] for _ in range(n_rows)]
    if n_rows > 2 and length:
        rows[0] = [True] * length
        rows[1] = [False] * length
    return rows


# --- the move step ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("x....x....x....x", "....xx........xx"),
        ("x...xx...x", "...xxx...x"),
        ("x.x.x", ".xx.x"),
        ("xx.x", "xx.x"),
        ("x", "x"),
        ("", ""),
    ],
)
def test_issue_examples(before: str, after: str) -> None:
    assert as_text(reference_span_adjacent([c == "x" for c in before])) == after
    assert as_text(span_adjacent(from_text(before).reshape(1, -1))[0].tolist()) == after


def test_move_step_equals_reference_on_random_masks() -> None:
    rng = random.Random(1234)
    checked = 0
    for _ in range(3000):
        length = rng.choice([0, 1, 2, 3, rng.randint(4, 20), rng.randint(20, 130)])
        density = rng.choice([0.0, 0.05, 0.15, 0.2, 0.35, 0.5, 0.8, 0.95, 1.0])
        rows = random_rows(rng, rng.randint(1, 6), length, density)
        mask = torch.tensor(rows, dtype=torch.bool).reshape(len(rows), length)
        got = span_adjacent(mask)
        assert got.tolist() == [reference_span_adjacent(r) for r in rows], rows
        assert torch.equal(got.sum(1), mask.sum(1))
        assert torch.equal(mask, torch.tensor(rows, dtype=torch.bool).reshape(len(rows), length))
        checked += len(rows)
    assert checked > 8000


def test_move_step_rows_are_independent_in_one_big_batch() -> None:
    rng = random.Random(7)
    rows = [r for d in (0.1, 0.2, 0.5, 0.9) for r in random_rows(rng, 250, 64, d)]
    got = span_adjacent(torch.tensor(rows, dtype=torch.bool))
    assert got.tolist() == [reference_span_adjacent(r) for r in rows]


def test_move_step_with_breaks_equals_reference_per_stretch() -> None:
    rng = random.Random(99)
    for _ in range(1500):
        length = rng.randint(1, 80)
        n_rows = rng.randint(1, 5)
        density = rng.choice([0.1, 0.2, 0.5, 0.9, 1.0])
        breaks = [[rng.random() < rng.choice([0.0, 0.05, 0.2]) for _ in range(length)] for _ in range(n_rows)]
        rows = [
            [rng.random() < density and not b for b in brow]  # breaks are never masked
            for brow in breaks
        ]
        got = span_adjacent(torch.tensor(rows), breaks=torch.tensor(breaks))
        assert got.tolist() == [reference_with_breaks(r, b) for r, b in zip(rows, breaks)]
        assert not (got & torch.tensor(breaks)).any()


def test_breaks_only_at_the_ends_give_the_released_behaviour() -> None:
    rng = random.Random(5)
    for _ in range(300):
        length = rng.randint(3, 60)
        n_pad = rng.randint(0, 5)
        inner = [rng.random() < 0.3 for _ in range(length - 2)]
        row = [False, *inner, False] + [False] * n_pad
        breaks = [True] + [False] * (length - 2) + [True] + [True] * n_pad
        got = span_adjacent(torch.tensor([row]), breaks=torch.tensor([breaks]))[0].tolist()
        assert got == reference_span_adjacent(row)


@pytest.mark.parametrize(
    ("mask", "breaks", "needle"),
    [
        (torch.zeros(5, dtype=torch.bool), None, "2-D torch.bool"),
        (torch.zeros(2, 5, dtype=torch.long), None, "2-D torch.bool"),
        ([[True, False]], None, "2-D torch.bool"),
        (torch.zeros(2, 5, dtype=torch.bool), torch.zeros(2, 4, dtype=torch.bool), "breaks"),
        (torch.ones(1, 3, dtype=torch.bool), torch.tensor([[True, False, False]]), "special"),
    ],
)
def test_move_step_rejects_bad_input(mask, breaks, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        span_adjacent(mask, breaks=breaks)


# --- collators: fixtures and helpers --------------------------------------------------


@pytest.fixture(scope="module")
def bert_tok(tiny_bert_dir: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.fixture(scope="module")
def bpe_tok():
    """A byte-level BPE tokenizer trained here on a few sentences (no download)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=320,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(SENTENCES * 3, trainer)
    backend.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        cls_token="<s>",
        sep_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
    )


def packed_features(tok, rng: random.Random, n: int, *, max_parts: int = 4) -> list[dict]:
    """Rows of [CLS] text [SEP] text [SEP] ... of random lengths, with a word_ids column."""
    content = [i for i in range(len(tok)) if i not in set(tok.all_special_ids)]
    features = []
    for _ in range(n):
        ids, words, word = [tok.cls_token_id], [None], 0
        for _ in range(rng.randint(1, max_parts)):
            for _ in range(rng.randint(0, 12)):
                for _ in range(rng.choice([1, 1, 1, 2, 3])):
                    ids.append(rng.choice(content))
                    words.append(word)
                word += 1
            ids.append(tok.sep_token_id)
            words.append(None)
        features.append({"input_ids": ids, "word_ids": words})
    return features


def unmaskable(batch_ids: torch.Tensor, tok) -> torch.Tensor:
    return torch.isin(batch_ids, torch.tensor([tok.cls_token_id, tok.sep_token_id, tok.pad_token_id]))


def padded_ids(features: list[dict], pad_id: int) -> torch.Tensor:
    width = max(len(f["input_ids"]) for f in features)
    return torch.tensor([f["input_ids"] + [pad_id] * (width - len(f["input_ids"])) for f in features])


def assert_whole_words(labels: torch.Tensor, word_ids: list[list[int | None]]) -> int:
    """Every word fully masked or not at all; returns how many multi-token words were masked."""
    multi = 0
    for i, words in enumerate(word_ids):
        groups: dict[int, list[bool]] = {}
        for j, w in enumerate(words):
            if w is not None:
                groups.setdefault(w, []).append(bool(labels[i, j] != -100))
        for flags in groups.values():
            assert all(flags) or not any(flags), (i, words, labels[i])
            multi += len(flags) > 1 and all(flags)
    return multi


# --- collators: invariants --------------------------------------------------------------


@pytest.mark.parametrize("masking", MASKING_CHOICES)
def test_never_masks_special_or_padding_and_labels_are_the_originals(bert_tok, masking: str) -> None:
    rng = random.Random(masking)
    collator = make_mlm_collator(masking, bert_tok, mlm_probability=0.6, seed=3)
    total_masked = 0
    for _ in range(15):
        features = packed_features(bert_tok, rng, 6)
        original = padded_ids(features, bert_tok.pad_token_id)
        batch = collator(features)
        blocked = unmaskable(original, bert_tok)
        assert not (batch["labels"] != -100)[blocked].any()
        assert torch.equal(batch["input_ids"][blocked], original[blocked])
        chosen = batch["labels"] != -100
        assert torch.equal(batch["labels"][chosen], original[chosen])
        assert "word_ids" not in batch and "special_tokens_mask" not in batch
        total_masked += int(chosen.sum())
    assert total_masked > 100


def test_span_adjacent_collator_is_the_move_step_on_the_first_bernoulli_draw(bert_tok) -> None:
    """Bit for bit: the released scan (per stretch) applied to the BERT mask drawn first."""
    rng = random.Random(11)
    for seed in range(8):
        features = [{"input_ids": f["input_ids"]} for f in packed_features(bert_tok, rng, 8)]
        original = padded_ids(features, bert_tok.pad_token_id)
        p = 0.2 if seed % 2 else 0.45
        batch = DataCollatorForSpanAdjacentMasking(bert_tok, mlm_probability=p, seed=seed)(features)
        generator = torch.Generator().manual_seed(seed)
        blocked = unmaskable(original, bert_tok)
        initial = torch.bernoulli(torch.full(original.shape, p), generator=generator).bool() & ~blocked
        expected = [reference_with_breaks(r, b) for r, b in zip(initial.tolist(), blocked.tolist())]
        assert (batch["labels"] != -100).tolist() == expected


def test_span_adjacent_reproduces_the_released_scan_on_plain_rows(bert_tok) -> None:
    lengths = [30, 17, 52, 8]
    features = [{"input_ids": [bert_tok.cls_token_id] + [7 + i % 50 for i in range(n)] + [bert_tok.sep_token_id]}
                for n in lengths]
    original = padded_ids(features, bert_tok.pad_token_id)
    batch = DataCollatorForSpanAdjacentMasking(bert_tok, mlm_probability=0.2, seed=21)(features)
    generator = torch.Generator().manual_seed(21)
    initial = torch.bernoulli(torch.full(original.shape, 0.2), generator=generator).bool()
    initial &= ~unmaskable(original, bert_tok)
    assert (batch["labels"] != -100).tolist() == [reference_span_adjacent(r) for r in initial.tolist()]


@pytest.mark.parametrize("masking", MASKING_CHOICES)
def test_attention_mask_and_special_tokens_mask_block_masking(bert_tok, masking: str) -> None:
    """Rows pre-padded with an ordinary id, or with a flagged position mid-row, keep those."""
    collator = make_mlm_collator(masking, bert_tok, mlm_probability=0.9, seed=0)
    ids = torch.randint(5, len(bert_tok), (4, 40), generator=torch.Generator().manual_seed(0))
    attention = torch.ones_like(ids)
    attention[:, 30:] = 0
    special = torch.zeros_like(ids)
    special[:, 12] = 1
    words = torch.arange(40).expand(4, 40)
    features = [{"input_ids": ids[i], "attention_mask": attention[i], "special_tokens_mask": special[i],
                 "word_ids": words[i]} for i in range(4)]
    for _ in range(5):
        chosen = collator(features)["labels"] != -100
        assert not chosen[:, 30:].any() and not chosen[:, 12].any()
        assert chosen[:, :12].any(1).all() and chosen[:, 13:30].any(1).all()


def test_unk_is_an_ordinary_maskable_token(bert_tok) -> None:
    row = [bert_tok.cls_token_id] + [bert_tok.unk_token_id] * 30 + [bert_tok.sep_token_id]
    chosen = make_mlm_collator("span-adjacent", bert_tok, seed=0)([row, row])["labels"] != -100
    assert chosen[:, 1:-1].any() and not chosen[:, [0, -1]].any()


@pytest.mark.parametrize("masking", MASKING_CHOICES)
def test_same_seed_same_batch_different_seed_different(bert_tok, masking: str) -> None:
    features = packed_features(bert_tok, random.Random(0), 8)
    first = make_mlm_collator(masking, bert_tok, seed=1)
    again = make_mlm_collator(masking, bert_tok, seed=1)
    other = make_mlm_collator(masking, bert_tok, seed=2)
    for _ in range(3):
        a, b, c = first(features), again(features), other(features)
        assert torch.equal(a["input_ids"], b["input_ids"]) and torch.equal(a["labels"], b["labels"])
        assert not torch.equal(a["labels"], c["labels"])


@pytest.mark.parametrize("cls", [DataCollatorForTokenMasking, DataCollatorForSpanAdjacentMasking])
def test_mask_rate_and_80_10_10_proportions(bert_tok, cls) -> None:
    n_rows, width, p = 48, 256, 0.4
    content = torch.randint(5, len(bert_tok), (n_rows, width), generator=torch.Generator().manual_seed(0))
    content[:, 0], content[:, -1] = bert_tok.cls_token_id, bert_tok.sep_token_id
    batch = cls(bert_tok, mlm_probability=p, seed=0)([row for row in content.clone()])
    chosen = batch["labels"] != -100
    n = int(chosen.sum())
    assert abs(n / (n_rows * (width - 2)) - p) < 0.015
    as_mask = (batch["input_ids"] == bert_tok.mask_token_id)[chosen].float().mean().item()
    unchanged = (batch["input_ids"] == content)[chosen].float().mean().item()
    assert abs(as_mask - 0.8) < 0.02
    assert abs(unchanged - 0.1) < 0.02
    assert abs((1 - as_mask - unchanged) - 0.1) < 0.02
    assert torch.equal(batch["input_ids"][~chosen], content[~chosen])


def test_span_adjacent_turns_singles_into_spans(bert_tok) -> None:
    content = torch.randint(5, len(bert_tok), (32, 258), generator=torch.Generator().manual_seed(1))
    runs = {}
    for name in ("token", "span-adjacent"):
        labels = make_mlm_collator(name, bert_tok, mlm_probability=0.2, seed=4)(list(content.clone()))["labels"]
        lengths = Counter()
        for row in (labels != -100).tolist():
            n = 0
            for v in row + [False]:
                if v:
                    n += 1
                elif n:
                    lengths[n] += 1
                    n = 0
        runs[name] = lengths[1] / sum(lengths.values())
    assert runs["token"] > 0.7 and runs["span-adjacent"] < 0.05


# --- whole words --------------------------------------------------------------------------


def _word_features(tok, use: str) -> tuple[list[dict], list[list[int | None]]]:
    enc = tok(SENTENCES, return_offsets_mapping=use == "offsets")
    features = []
    for i in range(len(SENTENCES)):
        feature = {"input_ids": enc["input_ids"][i]}
        if use == "word_ids":
            feature["word_ids"] = enc.word_ids(i)
        else:
            feature["offset_mapping"] = enc["offset_mapping"][i]
        features.append(feature)
    return features, [enc.word_ids(i) for i in range(len(SENTENCES))]


@pytest.mark.parametrize("use", ["word_ids", "offsets"])
@pytest.mark.parametrize("tok_name", ["bert_tok", "bpe_tok"])
@pytest.mark.parametrize("masking", ["whole-word", "span-geometric"])
def test_whole_words_for_wordpiece_and_byte_level_bpe(request, tok_name: str, use: str, masking: str) -> None:
    tok = request.getfixturevalue(tok_name)
    features, word_ids = _word_features(tok, use)
    assert any(Counter(w for w in words if w is not None).most_common(1)[0][1] > 1 for words in word_ids)
    collator = make_mlm_collator(masking, tok, mlm_probability=0.3, seed=0)
    multi = 0
    for _ in range(40):
        batch = collator(features)
        multi += assert_whole_words(batch["labels"], word_ids)
        if masking == "whole-word":
            assert (batch["labels"] != -100).any()
    assert multi > 0


def test_whole_word_without_word_boundaries_is_an_error(bert_tok) -> None:
    collator = DataCollatorForWholeWordMasking(bert_tok)
    with pytest.raises(ValueError, match="word_ids"):
        collator([bert_tok("the senate")])


def test_word_ids_of_the_wrong_length_is_an_error(bert_tok) -> None:
    collator = DataCollatorForWholeWordMasking(bert_tok)
    with pytest.raises(ValueError, match="one entry per token"):
        collator([{"input_ids": [2, 10, 11, 3], "word_ids": [None, 0, None]}])


def test_word_ids_follow_left_padding(bert_tok) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(bert_tok.name_or_path, padding_side="left")
    features, word_ids = _word_features(tok, "word_ids")
    width = max(len(w) for w in word_ids)
    shifted = [[None] * (width - len(w)) + list(w) for w in word_ids]
    assert len(set(map(len, word_ids))) > 1
    collator = DataCollatorForWholeWordMasking(tok, mlm_probability=0.4, seed=0)
    multi, rows_masked = 0, torch.zeros(len(features), dtype=torch.bool)
    for _ in range(20):
        labels = collator(features)["labels"]
        multi += assert_whole_words(labels, shifted)
        rows_masked |= (labels != -100).any(1)
    assert multi > 0 and rows_masked.all()


# --- span-geometric ----------------------------------------------------------------------


def test_geometric_span_lengths_follow_truncated_geometric(bert_tok) -> None:
    collator = DataCollatorForSpanGeometricMasking(bert_tok, mlm_probability=0.05, seed=0)
    probs = collator.span_length_probs()
    assert probs.shape == (10,) and abs(float(probs.sum()) - 1) < 1e-6
    lengths = torch.arange(1, 11, dtype=torch.float32)
    expected_mean = float((probs * lengths).sum())
    assert 3.6 < expected_mean < 4.0  # SpanBERT reports a mean span of 3.8 words
    n_rows, width = 16, 4002
    ids = torch.randint(5, len(bert_tok), (n_rows, width), generator=torch.Generator().manual_seed(0))
    ids[:, 0], ids[:, -1] = bert_tok.cls_token_id, bert_tok.sep_token_id
    chosen = collator(list(ids))["labels"] != -100
    assert chosen.sum(1).tolist() == [round(0.05 * (width - 2))] * n_rows
    runs = Counter()
    for row in chosen.tolist():
        n = 0
        for v in row + [False]:
            if v:
                n += 1
            elif n:
                runs[n] += 1
                n = 0
    total = sum(runs.values())
    mean = sum(k * v for k, v in runs.items()) / total
    assert abs(mean - expected_mean) < 0.45
    assert abs(runs[1] / total - float(probs[0])) < 0.06
    assert sum(v for k, v in runs.items() if k > 10) / total < 0.03


def test_geometric_budget_and_stretches(bert_tok) -> None:
    rng = random.Random(8)
    collator = DataCollatorForSpanGeometricMasking(bert_tok, mlm_probability=0.3, seed=5)
    for _ in range(10):
        features = packed_features(bert_tok, rng, 6)
        original = padded_ids(features, bert_tok.pad_token_id)
        chosen = collator(features)["labels"] != -100
        n_content = (~unmaskable(original, bert_tok)).sum(1)
        budget = torch.where(n_content > 0, (0.3 * n_content).round().clamp(min=1), 0)
        # Whole words of at most 3 tokens: the last word may overshoot by two.
        assert ((chosen.sum(1) >= budget) & (chosen.sum(1) <= budget + 2)).all()
        assert_whole_words(torch.where(chosen, 0, -100), [f["word_ids"] for f in features])


def test_geometric_spans_do_not_run_across_a_separator(bert_tok) -> None:
    """[CLS] x [SEP] y1..y9 [SEP]: a span from x that ran on past [SEP] would often mask y1 with x."""
    collator = DataCollatorForSpanGeometricMasking(bert_tok, mlm_probability=0.3, geometric_p=0.01, seed=0)
    cls, sep = bert_tok.cls_token_id, bert_tok.sep_token_id
    rows = [[cls, 20, sep, *range(21, 30), sep]] * 4000
    chosen = collator(rows)["labels"] != -100
    assert (chosen.sum(1) == 3).all()
    assert chosen[:, 1].any()
    assert (chosen[:, 1] & chosen[:, 3]).float().mean().item() < 0.05


# --- input shapes a Trainer produces --------------------------------------------------------


@pytest.mark.parametrize("masking", MASKING_CHOICES)
def test_lists_of_dicts_tensors_and_prepadded_batches(bert_tok, tiny_bert_dir: str, masking: str) -> None:
    from transformers import BertForMaskedLM

    collator = make_mlm_collator(masking, bert_tok, seed=0, pad_to_multiple_of=8)
    encodings = [bert_tok(s) for s in SENTENCES]
    plain = [{"input_ids": e["input_ids"], "word_ids": e.word_ids()} for e in encodings]
    full = [{**e, "word_ids": e.word_ids()} for e in encodings]
    prepadded = bert_tok(SENTENCES, padding="longest", pad_to_multiple_of=8, return_tensors="pt")
    tensors = [{"input_ids": prepadded["input_ids"][i], "attention_mask": prepadded["attention_mask"][i],
                "word_ids": torch.tensor([-1 if w is None else w for w in prepadded.word_ids(i)])}
               for i in range(len(SENTENCES))]
    model = BertForMaskedLM.from_pretrained(tiny_bert_dir)
    for features in (plain, full, tensors):
        batch = collator(features)
        assert batch["input_ids"].shape == batch["labels"].shape
        assert batch["input_ids"].shape[1] % 8 == 0
        assert not (batch["labels"][batch["input_ids"] == bert_tok.pad_token_id] != -100).any()
        with torch.no_grad():
            loss = model(**batch).loss
        assert torch.isfinite(loss) or (batch["labels"] == -100).all()
    if masking != "whole-word":
        same = [torch.tensor(e["input_ids"][:6]) for e in encodings]
        assert collator(same)["input_ids"].shape == (len(SENTENCES), 8)
        ragged = [e["input_ids"] for e in encodings]
        out = collator(ragged)
        assert set(out) == {"input_ids", "labels"}
        assert (out["labels"][out["input_ids"] == bert_tok.pad_token_id] == -100).all()


def test_trainer_runs_whole_word_masking_with_a_word_ids_column(bert_tok, tiny_bert_dir: str, tmp_path) -> None:
    from datasets import Dataset
    from transformers import BertForMaskedLM, Trainer, TrainingArguments

    enc = bert_tok(SENTENCES * 4)
    data = Dataset.from_dict({"input_ids": enc["input_ids"], "word_ids": [enc.word_ids(i) for i in range(16)]})
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=4, report_to=[],
        remove_unused_columns=False, save_strategy="no", use_cpu=True, seed=0, dataloader_num_workers=0,
    )
    collator = make_mlm_collator("whole-word", bert_tok, mlm_probability=0.3, seed=0)
    trainer = Trainer(model=BertForMaskedLM.from_pretrained(tiny_bert_dir), args=args, train_dataset=data,
                      data_collator=collator)
    result = trainer.train()
    assert result.global_step == 2 and math.isfinite(result.training_loss)


def test_dataloader_workers_are_seeded_reproducibly(bert_tok) -> None:
    from torch.utils.data import DataLoader

    features = packed_features(bert_tok, random.Random(2), 16)

    def run() -> list[torch.Tensor]:
        collator = make_mlm_collator("span-adjacent", bert_tok, seed=9)
        loader = DataLoader(features, batch_size=4, num_workers=2, collate_fn=collator)
        return [b["labels"] for b in loader]

    first, second = run(), run()
    assert all(torch.equal(a, b) for a, b in zip(first, second))


# --- configuration errors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"mlm_probability": 0.0}, "mlm_probability"),
        ({"mlm_probability": 1.0}, "mlm_probability"),
        ({"mlm_probability": -0.1}, "mlm_probability"),
        ({"mlm_probability": 1.5}, "mlm_probability"),
        ({"mlm_probability": "0.15"}, "mlm_probability"),
        ({"mlm_probability": None}, "mlm_probability"),
        ({"mask_replace_prob": 0.9, "random_replace_prob": 0.2}, "exceeds 1"),
        ({"random_replace_prob": -0.1}, "random_replace_prob"),
        ({"mlm": False}, "mlm=False"),
        ({"whole_word_mask": True}, "DataCollatorForWholeWordMasking"),
        ({"return_tensors": "np"}, "return_tensors"),
        ({"seed": -1}, "seed"),
        ({"pad_to_multiple_of": 0}, "pad_to_multiple_of"),
    ],
)
@pytest.mark.parametrize("masking", MASKING_CHOICES)
def test_bad_configurations_raise(bert_tok, masking: str, kwargs: dict, needle: str) -> None:
    cls = make_mlm_collator(masking, bert_tok).__class__
    with pytest.raises(ValueError, match=needle):
        cls(tokenizer=bert_tok, **kwargs)


@pytest.mark.parametrize(("kwargs", "needle"), [({"geometric_p": 0.0}, "geometric_p"),
                                                ({"geometric_p": 1.2}, "geometric_p"),
                                                ({"max_span_length": 0}, "max_span_length")])
def test_bad_geometric_configurations_raise(bert_tok, kwargs: dict, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        DataCollatorForSpanGeometricMasking(bert_tok, **kwargs)


def test_tokenizer_without_mask_token_raises(bpe_tok) -> None:
    from transformers import PreTrainedTokenizerFast

    no_mask = PreTrainedTokenizerFast(tokenizer_object=bpe_tok.backend_tokenizer, pad_token="<pad>")
    for masking in MASKING_CHOICES:
        with pytest.raises(ValueError, match="no mask token"):
            make_mlm_collator(masking, no_mask)


def test_make_mlm_collator_maps_names_and_forwards_options(bert_tok) -> None:
    expected = {
        "token": DataCollatorForTokenMasking,
        "span-adjacent": DataCollatorForSpanAdjacentMasking,
        "whole-word": DataCollatorForWholeWordMasking,
        "span-geometric": DataCollatorForSpanGeometricMasking,
    }
    assert MASKING_CHOICES == tuple(expected)
    for name, cls in expected.items():
        collator = make_mlm_collator(name, bert_tok, mlm_probability=0.2, seed=3)
        assert type(collator) is cls and collator.mlm_probability == 0.2 and collator.seed == 3
    assert DataCollatorForSpanAdjacentMasking(bert_tok).mlm_probability == 0.15
    assert make_mlm_collator("span-geometric", bert_tok, geometric_p=0.3).geometric_p == 0.3
    with pytest.raises(ValueError, match="span-adjacent"):
        make_mlm_collator("span", bert_tok)
