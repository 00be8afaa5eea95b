"""The paper's Table 1 (sentences and entities per split) and Figure 1 (vocabulary overlap).

Entities are counted with seqeval's chunker, the same one the metric uses. The vocabulary
overlap between two domains is the intersection over union (in %) of their top-5K most
frequent lower-cased words, stopwords (scikit-learn's English list) and tokens without a
letter excluded.

Example:
    >>> from crossner_hf.data.stats import vocabulary_overlap
    >>> m = vocabulary_overlap({"a": [["Paris", "vote"]], "b": [["Paris", "song"]]}, top_k=5)
    >>> round(m["a"]["b"], 1)
    33.3
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

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
