"""Benchmark corpus-level building with the entity matcher of crossner_hf.corpora.

Run ``python benchmarks/corpus_matcher.py`` (``--quick`` for a smoke run). The entity list
has 100k entries: every entity surface of the CrossNER labeled data (all configs and
splits, about 30k) plus generated multi-word names (person-, party- and organisation-like
patterns over CrossNER's capitalised words). The corpus is 50k CrossNER sentences (all
configs and splits, repeated and shuffled, tokens joined by spaces).

Prints one table, median of ``--repeats`` runs, sentences per second:

* ``EntityMatcher.find_all``, case-sensitive and case-insensitive (the library);
* two baselines on the same texts, side by side: a whitespace-token n-gram lookup in a
  set (leftmost-longest, n up to the longest entity), whose mentions are also compared
  with the matcher's, and one ``re`` alternation of all entries (longest first, word
  lookarounds) timed on a sample because it is slow;
* ``build_corpus_levels`` end to end (``Dataset.map`` + filters + integrated shuffle) with
  ``num_proc`` 1 and 2.
"""

from __future__ import annotations

import argparse
import logging
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from crossner_hf.data.conll import read_conll
from crossner_hf.corpora import EntityMatcher, build_corpus_levels, entity_list_from_conll
from crossner_hf.data.labels import CONFIGS, LABELS

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "crossner"
SUFFIXES = ("Party", "University", "Institute", "Records", "Festival", "Award", "Society", "Movement")


def load_crossner(data_dir: Path) -> tuple[list[str], dict[str, str], list[str]]:
    """All sentences as text, the labeled entity list, and the capitalised words."""
    texts: list[str] = []
    entities: dict[str, str] = {}
    for config in CONFIGS:
        sentences = []
        for split in ("train", "dev", "test"):
            sentences += read_conll(data_dir / config / f"{split}.txt", LABELS[config])
        texts += [" ".join(s["tokens"]) for s in sentences]
        for surface, etype in entity_list_from_conll(sentences).items():
            entities.setdefault(surface, etype)
    words = sorted({w for t in texts for w in t.split() if w[:1].isupper() and w.isalpha() and len(w) > 2})
    return texts, entities, words


def synthesise_entities(real: dict[str, str], words: list[str], size: int, seed: int = 0) -> dict[str, str]:
    """``real`` topped up with generated multi-word names to ``size`` entries."""
    rng = random.Random(seed)
    items = sorted(real.items())
    rng.shuffle(items)  # a smaller list still samples every config's entities
    entities = dict(items[:size])
    while len(entities) < size:
        pattern = rng.random()
        if pattern < 0.5:
            name, etype = f"{rng.choice(words)} {rng.choice(words)}", "person"
        elif pattern < 0.8:
            name = f"{rng.choice(words)} {rng.choice(words)} {rng.choice(SUFFIXES)}"
            etype = "politicalparty" if name.endswith("Party") else "organisation"
        else:
            name, etype = f"The {rng.choice(words)} of {rng.choice(words)}", "misc"
        entities.setdefault(name, etype)
    return entities


def make_corpus(texts: list[str], size: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    corpus = (texts * (size // len(texts) + 1))[:size]
    rng.shuffle(corpus)
    return corpus


class NgramLookup:
    """Baseline: leftmost-longest lookup of whitespace-token n-grams in a set."""

    def __init__(self, entities: dict[str, str]) -> None:
        self.entities = entities
        self.max_n = max(len(s.split()) for s in entities)

    def find_all(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        out = []
        for text in texts:
            tokens = text.split(" ")
            found, i = [], 0
            while i < len(tokens):
                for n in range(min(self.max_n, len(tokens) - i), 0, -1):
                    key = " ".join(tokens[i : i + n])
                    if key in self.entities:
                        found.append((key, self.entities[key]))
                        i += n
                        break
                else:
                    i += 1
            out.append(found)
        return out


class RegexAlternation:
    """Baseline: one ``re`` pattern, entries longest first, not inside words."""

    def __init__(self, entities: dict[str, str]) -> None:
        self.entities = entities
        alternation = "|".join(re.escape(s) for s in sorted(entities, key=len, reverse=True))
        self.pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)")

    def find_all(self, texts: list[str]) -> list[list[tuple[str, str]]]:
        return [[(m.group(), self.entities[m.group()]) for m in self.pattern.finditer(t)] for t in texts]


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    parser.add_argument("--data_dir", type=Path, default=DEFAULT_DATA, help="CrossNER data folder.")
    parser.add_argument("--entities", type=int, default=100_000, help="Entity list size.")
    parser.add_argument("--sentences", type=int, default=50_000, help="Corpus size.")
    parser.add_argument("--regex_sample", type=int, default=500, help="Sentences timed for the regex baseline.")
    parser.add_argument("--repeats", type=int, default=3, help="Runs per measurement (median shown).")
    parser.add_argument("--quick", action="store_true", help="10k entities, 5k sentences, 2 repeats.")
    args = parser.parse_args(argv)
    if args.quick:
        args.entities, args.sentences, args.repeats, args.regex_sample = 10_000, 5_000, 2, 200
    logging.getLogger("datasets").setLevel(logging.ERROR)
    import datasets

    datasets.disable_progress_bars()

    texts, real, words = load_crossner(args.data_dir)
    entities = synthesise_entities(real, words, args.entities)
    corpus = make_corpus(texts, args.sentences)
    n = len(corpus)
    print(f"{len(entities)} entities ({min(len(real), args.entities)} from CrossNER labels), {n} sentences "
          f"(mean {statistics.mean(len(t) for t in corpus):.0f} characters), median of {args.repeats} runs\n")

    build_start = time.perf_counter()
    matcher = EntityMatcher(entities)
    build_time = time.perf_counter() - build_start
    matcher_ci = EntityMatcher(entities, case_sensitive=False)
    ngram = NgramLookup(entities)
    regex_start = time.perf_counter()
    regex = RegexAlternation(entities)
    regex_build = time.perf_counter() - regex_start
    sample = corpus[: args.regex_sample]

    def timed(fn: Callable[[], object]) -> float:
        return median_seconds(fn, args.repeats)

    rows: list[tuple[str, int, float]] = [
        ("EntityMatcher.find_all (case-sensitive)", n, timed(lambda: matcher.find_all(corpus))),
        ("EntityMatcher.find_all (case-insensitive)", n, timed(lambda: matcher_ci.find_all(corpus))),
        (f"baseline: token n-gram set lookup (n <= {ngram.max_n})", n, timed(lambda: ngram.find_all(corpus))),
        ("baseline: re alternation (sample)", len(sample), timed(lambda: regex.find_all(sample))),
    ]
    for num_proc in (None, 2):
        seconds = timed(lambda procs=num_proc: build_corpus_levels(corpus, matcher, "politics", num_proc=procs))
        rows.append((f"build_corpus_levels, num_proc={num_proc or 1}", n, seconds))

    base = n / rows[0][2]
    print(f"{'method':52s} {'sentences':>9s} {'seconds':>8s} {'sent/s':>10s} {'vs matcher':>10s}")
    for name, count, seconds in rows:
        rate = count / seconds
        print(f"{name:52s} {count:9d} {seconds:8.2f} {rate:10.0f} {rate / base:10.2f}")
    print(f"\nautomaton build: {build_time:.2f} s for {len(entities)} entries; re compile: {regex_build:.2f} s")

    ours = [[(m.surface, m.type) for m in found] for found in matcher.find_all(corpus)]
    theirs = ngram.find_all(corpus)
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    print(f"mentions identical to the n-gram baseline on {same}/{n} sentences ({same / n:.2%}); "
          f"{sum(map(len, ours))} mentions in all")
    for a, b in zip(ours, theirs, strict=True):
        if a != b:
            print(f"first difference (word boundaries are not whitespace): matcher only {sorted(set(a) - set(b))}, "
                  f"n-gram only {sorted(set(b) - set(a))}")
            break
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
