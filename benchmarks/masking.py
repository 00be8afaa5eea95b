"""Benchmark the masked-LM collators of crossner_hf.data.masking.

Run ``python benchmarks/masking.py`` (``--quick`` for a smoke run). Prints three tables:

1. Time per batch (32 rows of 512 tokens, random ids from a 30k WordPiece vocabulary built
   here, Trainer-style list of dicts) of every collator next to
   ``transformers.DataCollatorForLanguageModeling`` on the same batches, calls interleaved.
   Target: span-adjacent within 1.3x the token-level transformers collator.
2. The span-adjacent move step alone (:func:`crossner_hf.data.masking.span_adjacent`) against
   the released CrossNER loop over tensor elements, copied below. Target: >= 20x faster.
   The outputs are also compared for equality.
3. Span-length histogram of the span-adjacent collator at p=0.2 on 512-token rows,
   against the expected ~1% / 79% / 16% for lengths 1 / 2 / 3.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import BertTokenizer, DataCollatorForLanguageModeling

from crossner_hf.data.masking import MASKING_CHOICES, make_mlm_collator, span_adjacent

ROWS, WIDTH, VOCAB = 32, 512, 30_000
EXPECTED_HISTOGRAM = {1: 0.01, 2: 0.79, 3: 0.16}  # share of spans at p=0.2
HISTOGRAM_TOLERANCE = 0.015


def released_move(masked_indices: torch.Tensor) -> torch.Tensor:
    """The released CrossNER loop (run_language_modeling.py), element by element on a tensor."""
    masked_indices = masked_indices.clone()
    for i, line in enumerate(masked_indices):
        record_index = -1
        for j, value in enumerate(line):
            if value:
                if record_index == -1:
                    if j != 0 and masked_indices[i][j - 1]:
                        continue
                    record_index = j
                else:
                    if record_index == j - 1:
                        record_index = -1
                        continue
                    masked_indices[i][record_index] = False
                    masked_indices[i][j - 1] = True
                    record_index = -1
    return masked_indices


def build_tokenizer(folder: Path) -> BertTokenizer:
    """A BERT-sized (30k) WordPiece vocabulary of made-up words, written offline."""
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = [f"w{i:05d}" for i in range(VOCAB - len(specials))]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(specials + words) + "\n", encoding="utf-8")
    return BertTokenizer(vocab=str(vocab))


def make_batches(tok: BertTokenizer, n: int, seed: int) -> list[list[dict[str, list[int]]]]:
    gen = torch.Generator().manual_seed(seed)
    content = torch.randint(5, len(tok), (n, ROWS, WIDTH - 2), generator=gen)
    batches = []
    for b in range(n):
        rows = [[tok.cls_token_id, *row, tok.sep_token_id] for row in content[b].tolist()]
        # One word = 1-3 consecutive ids, so whole-word maskings have words to work with.
        lengths = torch.randint(1, 4, (WIDTH,), generator=gen).tolist()
        word_ids = [w for w, n_tok in enumerate(lengths) for _ in range(n_tok)][: WIDTH - 2]
        batches.append([{"input_ids": r, "word_ids": [None, *word_ids, None]} for r in rows])
    return batches


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_collators(tok: BertTokenizer, batches: list, repeats: int) -> dict[str, float]:
    collators: dict[str, Callable] = {
        "transformers DataCollatorForLanguageModeling": DataCollatorForLanguageModeling(tok, seed=0),
    }
    for name in MASKING_CHOICES:
        collators[f"crossner_hf {name}"] = make_mlm_collator(name, tok, seed=0)
    with_words = {"crossner_hf whole-word", "crossner_hf span-geometric"}
    plain = [[{"input_ids": f["input_ids"]} for f in batch] for batch in batches]
    times: dict[str, list[float]] = {name: [] for name in collators}
    for _ in range(repeats):
        for b in range(len(batches)):
            # Interleave the collators on each batch so drift hits all of them alike.
            for name, collator in collators.items():
                features = batches[b] if name in with_words else plain[b]
                times[name].append(timed(lambda: collator(features)))
    return {name: statistics.median(t) for name, t in times.items()}


def bench_move_step(tok: BertTokenizer, batches: list, repeats: int) -> tuple[float, float, float, bool]:
    gen = torch.Generator().manual_seed(1)
    ids = torch.tensor([f["input_ids"] for f in batches[0]])
    special = (ids == tok.cls_token_id) | (ids == tok.sep_token_id)
    masks = [torch.bernoulli(torch.full(ids.shape, 0.2), generator=gen).bool() & ~special for _ in range(repeats)]
    fast = [timed(lambda: span_adjacent(m)) for m in masks for _ in range(5)]
    fast_breaks = [timed(lambda: span_adjacent(m, breaks=special)) for m in masks for _ in range(5)]
    slow, equal = [], True
    for m in masks:
        start = time.perf_counter()
        released = released_move(m)
        slow.append(time.perf_counter() - start)
        equal &= torch.equal(released, span_adjacent(m)) and torch.equal(released, span_adjacent(m, breaks=special))
    return statistics.median(fast), statistics.median(fast_breaks), statistics.median(slow), equal


def span_histogram(tok: BertTokenizer, batches: list, masking: str) -> Counter:
    collator = make_mlm_collator(masking, tok, mlm_probability=0.2, seed=0)
    runs: Counter = Counter()
    for batch in batches:
        chosen = collator([{"input_ids": f["input_ids"]} for f in batch])["labels"] != -100
        for row in chosen.tolist():
            n = 0
            for v in [*row, False]:
                if v:
                    n += 1
                elif n:
                    runs[n] += 1
                    n = 0
    return runs


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few batches and repeats: a smoke run")
    parser.add_argument("--batches", type=int, default=None, help="distinct batches (default 10, quick 2)")
    parser.add_argument("--repeats", type=int, default=None, help="passes over the batches (default 5, quick 1)")
    args = parser.parse_args(argv)
    n_batches = args.batches or (2 if args.quick else 10)
    repeats = args.repeats or (1 if args.quick else 5)
    torch.manual_seed(0)

    with tempfile.TemporaryDirectory() as folder:
        tok = build_tokenizer(Path(folder))
        batches = make_batches(tok, n_batches, seed=0)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {ROWS} rows x {WIDTH} tokens, "
          f"vocab {len(tok)}; {n_batches} batches x {repeats} repeats; medians\n")

    med = bench_collators(tok, batches, repeats)
    base = med["transformers DataCollatorForLanguageModeling"]
    print("1. Collator time per batch (list of dicts with input_ids; word ids for whole-word and span-geometric)")
    print(f"{'collator':48s} {'ms/batch':>9s} {'x transformers':>15s}")
    for name, t in med.items():
        print(f"{name:48s} {t * 1e3:9.2f} {t / base:15.2f}")
    ratio = med["crossner_hf span-adjacent"] / base
    print(f"target: span-adjacent <= 1.3x transformers token-level -> {ratio:.2f}x {verdict(ratio <= 1.3)}\n")

    fast, fast_breaks, slow, equal = bench_move_step(tok, batches, 2 if args.quick else 5)
    print("2. Move step alone (32 x 512 mask, p=0.2)")
    print(f"{'implementation':48s} {'ms/batch':>9s} {'speed-up':>15s}")
    print(f"{'released loop over tensor elements':48s} {slow * 1e3:9.2f} {1.0:15.1f}")
    print(f"{'span_adjacent(mask)':48s} {fast * 1e3:9.3f} {slow / fast:15.1f}")
    print(f"{'span_adjacent(mask, breaks=special)':48s} {fast_breaks * 1e3:9.3f} {slow / fast_breaks:15.1f}")
    print(f"identical outputs: {equal}")
    speedup = slow / max(fast, fast_breaks)  # judged on the slower variant; the collator uses breaks
    print(f"target: move step >= 20x faster than the released loop -> {speedup:.0f}x {verdict(speedup >= 20)}\n")

    hist_batches = make_batches(tok, 3 if args.quick else 20, seed=1)
    adjacent = span_histogram(tok, hist_batches, "span-adjacent")
    token = span_histogram(tok, hist_batches, "token")
    total_a, total_t = sum(adjacent.values()), sum(token.values())
    print(f"3. Span lengths at p=0.2 on {WIDTH}-token rows ({total_a} spans; share of spans)")
    print(f"{'length':>6s} {'span-adjacent':>14s} {'expected':>9s} {'token-level':>12s}")
    for length in range(1, max(adjacent) + 1):
        expected = EXPECTED_HISTOGRAM.get(length)
        shown = f"{expected:9.1%}" if expected is not None else f"{'':9s}"
        print(f"{length:6d} {adjacent[length] / total_a:14.1%} {shown} {token[length] / total_t:12.1%}")
    close = all(abs(adjacent[k] / total_a - v) <= HISTOGRAM_TOLERANCE for k, v in EXPECTED_HISTOGRAM.items())
    print(f"histogram within {HISTOGRAM_TOLERANCE:.1%} of expected: {verdict(close)}")
    return 0 if equal and close else 1


if __name__ == "__main__":
    raise SystemExit(main())
