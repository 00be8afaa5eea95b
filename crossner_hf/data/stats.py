"""The paper's Table 1 (sentences and entities per split) and Figure 1 (vocabulary overlap).

Entities are counted with seqeval's chunker, the same one the metric uses. The vocabulary
overlap between two domains is the intersection over union (in %) of their top-5K most
frequent lower-cased words, stopwords (scikit-learn's English list) and tokens without a
letter excluded.

The same measure over the unlabeled domain corpora (the CrossNER appendix samples 150K
paragraphs of each and keeps the top-50K words): :func:`corpus_overlap` reads one paragraph a
line, draws a seeded sample of them, and splits words with one regular expression (the paper
names no tokenizer).

Example:
    >>> from crossner_hf.data.stats import vocabulary_overlap
    >>> m = vocabulary_overlap({"a": [["Paris", "vote"]], "b": [["Paris", "song"]]}, top_k=5)
    >>> round(m["a"]["b"], 1)
    33.3
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from crossner_hf.extras import require
from crossner_hf.data.labels import entity_types

SPLITS = ("train", "validation", "test")


def sentence_counts(dataset_dict) -> dict[str, int]:
    return {split: len(dataset_dict[split]) for split in SPLITS if split in dataset_dict}


def entity_counts(dataset_dict, config: str) -> dict[str, dict[str, int]]:
    """``{split: {type: n}}``, every type of the config present (zeros included)."""
    from seqeval.metrics.sequence_labeling import get_entities

    out: dict[str, dict[str, int]] = {}
    for split in SPLITS:
        if split not in dataset_dict:
            continue
        names = dataset_dict[split].features["ner_tags"].feature.names
        counts = Counter({t: 0 for t in entity_types(config)})
        for tags in dataset_dict[split]["ner_tags"]:
            counts.update(t for t, _, _ in get_entities([names[i] for i in tags]))
        out[split] = dict(counts)
    return out


def top_words(sentences: Iterable[Sequence[str]], top_k: int = 5000) -> set[str]:
    """The ``top_k`` most frequent lower-cased words, without stopwords or letterless tokens."""
    ENGLISH_STOP_WORDS = require("sklearn.feature_extraction.text", "plots").ENGLISH_STOP_WORDS

    counts: Counter[str] = Counter()
    for tokens in sentences:
        counts.update(
            w for w in (t.lower() for t in tokens)
            if w not in ENGLISH_STOP_WORDS and any(c.isalpha() for c in w)
        )
    # ties broken alphabetically so the set is deterministic
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {w for w, _ in ranked[:top_k]}


def vocabulary_overlap(
    corpora: Mapping[str, Iterable[Sequence[str]]], top_k: int = 5000
) -> dict[str, dict[str, float]]:
    """Pairwise IoU (%) of the domains' top-``top_k`` vocabularies."""
    vocab = {name: top_words(sents, top_k) for name, sents in corpora.items()}
    return {
        a: {b: 100.0 * len(vocab[a] & vocab[b]) / max(1, len(vocab[a] | vocab[b])) for b in vocab}
        for a in vocab
    }


WORD = re.compile(r"\w+(?:[-'’]\w+)*")


def sample_paragraphs(files: Sequence[str | Path], paragraphs: int, seed: int = 0) -> list[str]:
    """A seeded uniform sample (reservoir) of ``paragraphs`` non-empty lines of ``files``, in file order.

    All lines when the files hold fewer; one pass, memory bounded by the sample.
    """
    rng = random.Random(seed)
    reservoir: list[tuple[int, str]] = []
    seen = 0
    for path in files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    continue
                if len(reservoir) < paragraphs:
                    reservoir.append((seen, line))
                else:
                    j = rng.randrange(seen + 1)
                    if j < paragraphs:
                        reservoir[j] = (seen, line)
                seen += 1
    return [line for _, line in sorted(reservoir)]


def _words(paragraphs: Iterable[str]) -> Iterator[list[str]]:
    for paragraph in paragraphs:
        yield WORD.findall(paragraph)


def corpus_overlap(
    corpora: Mapping[str, Sequence[str | Path]], paragraphs: int = 150_000, top_k: int = 50_000, seed: int = 0
) -> dict[str, dict[str, float]]:
    """Pairwise IoU (%) of the top-``top_k`` words of a ``paragraphs``-line sample of each domain's corpus files."""
    return vocabulary_overlap(
        {name: list(_words(sample_paragraphs(files, paragraphs, seed))) for name, files in corpora.items()}, top_k
    )


def format_table1(
    sentences: Mapping[str, Mapping[str, int]], entities: Mapping[str, Mapping[str, Mapping[str, int]]]
) -> str:
    """Plain-text Table 1: one block per config, sentences then entities per type."""
    lines: list[str] = []
    for config, counts in sentences.items():
        lines.append(f"== {config} ==")
        lines.append(f"{'':24s}" + "".join(f"{s:>12s}" for s in SPLITS))
        lines.append(f"{'sentences':24s}" + "".join(f"{counts.get(s, 0):>12d}" for s in SPLITS))
        per_split = entities[config]
        types = next(iter(per_split.values())).keys()
        total = {s: sum(per_split[s].values()) for s in per_split}
        lines.append(f"{'entities':24s}" + "".join(f"{total.get(s, 0):>12d}" for s in SPLITS))
        for t in types:
            lines.append(f"  {t:22s}" + "".join(f"{per_split[s][t]:>12d}" for s in SPLITS))
        lines.append("")
    return "\n".join(lines)


def format_overlap(matrix: Mapping[str, Mapping[str, float]]) -> str:
    names = list(matrix)
    head = f"{'':12s}" + "".join(f"{n:>12s}" for n in names)
    rows = [f"{a:12s}" + "".join(f"{matrix[a][b]:>12.1f}" for b in names) for a in names]
    return "\n".join([head, *rows])
