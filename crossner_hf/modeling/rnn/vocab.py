"""Word and character vocabularies of the BiLSTM models, and GloVe-format word vectors.

As in the released CDLM code (NCRF++): digits are mapped to ``0`` before lookup; a word
missing from the vocabulary falls back to its lower-cased form, then to ``<unk>``. One
vocabulary serves every domain: the words of the LM texts seen more than ``min_count``
times (default 2) plus every word of the NER splits. Ids are sorted by frequency (most
frequent first), which the LM's log-uniform negative sampler assumes; ``<pad>`` is 0,
``<unk>`` 1 and ``<s>`` 2, the sentence-boundary symbol the LM predicts at both ends (the
release reused the unknown-word id for it).

The vocabulary is saved as ``vocab.json`` next to the model (``save``/``load``).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

PAD, UNK, BOUNDARY = "<pad>", "<unk>", "<s>"
VOCAB_FILE = "vocab.json"
_DIGITS = re.compile(r"\d")


@functools.lru_cache(maxsize=1 << 16)  # every token of every batch is looked up: most are frequent words
def normalize(word: str) -> str:
    return _DIGITS.sub("0", word)


class WordCharVocab:
    """Word ids (frequency order) and character ids, with the lookups of the released code."""

    def __init__(self, words: Sequence[str], chars: Sequence[str], counts: Sequence[int] | None = None):
        self.words = list(words)
        self.chars = list(chars)
        self.counts = list(counts) if counts is not None else [0] * len(self.words)
        self.word_index = {w: i for i, w in enumerate(self.words)}
        self.char_index = {c: i for i, c in enumerate(self.chars)}
        if self.words[:3] != [PAD, UNK, BOUNDARY] or self.chars[:2] != [PAD, UNK]:
            raise ValueError("WordCharVocab: words must start with <pad>, <unk>, <s> and chars with <pad>, <unk>.")

    @classmethod
    def build(
        cls, ner_sentences: Iterable[Sequence[str]], lm_sentences: Iterable[Sequence[str]] = (), min_count: int = 2
    ) -> WordCharVocab:
        # each distinct word is normalised (and its characters read) once: a corpus repeats its words many times
        raw_ner, raw_lm = Counter(), Counter()
        for sent in ner_sentences:
            raw_ner.update(sent)
        for sent in lm_sentences:
            raw_lm.update(sent)
        ner_counts, lm_counts = Counter(), Counter()
        chars: set[str] = set()
        for raw, counts in ((raw_ner, ner_counts), (raw_lm, lm_counts)):
            for w, n in raw.items():
                counts[normalize(w)] += n
                chars.update(w)
        total = ner_counts + lm_counts
        keep = [w for w in total if w in ner_counts or lm_counts[w] > min_count]
        keep.sort(key=lambda w: (-total[w], w))
        words = [PAD, UNK, BOUNDARY] + keep
        return cls(words, [PAD, UNK] + sorted(chars), [0, 0, 0] + [total[w] for w in keep])

    def __len__(self) -> int:
        return len(self.words)

    def word_id(self, word: str) -> int:
        w = normalize(word)
        i = self.word_index.get(w)
        if i is None:
            i = self.word_index.get(w.lower(), 1)
        return i

    def encode(self, sentences: Sequence[Sequence[str]], max_word_len: int = 30):
        """``(word_ids (B, T), char_ids (B, T, L), mask (B, T))`` tensors, right-padded; words longer than
        ``max_word_len`` keep their first characters."""
        time = max(max((len(s) for s in sentences), default=0), 1)
        width = max(min(max((len(w) for s in sentences for w in s), default=1), max_word_len), 1)
        # nested lists, then one tensor each: writing tensors element by element costs ~10x more
        chars, pad_word = self.char_index, [0] * width
        word_ids = [[self.word_id(w) for w in s] + [0] * (time - len(s)) for s in sentences]
        char_ids = [[[chars.get(c, 1) for c in w[:width]] + [0] * (width - len(w[:width])) for w in s]
                    + [pad_word] * (time - len(s)) for s in sentences]
        lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
        mask = torch.arange(time).unsqueeze(0) < lengths.unsqueeze(1)
        return (torch.tensor(word_ids, dtype=torch.long).view(len(sentences), time),
                torch.tensor(char_ids, dtype=torch.long).view(len(sentences), time, width), mask)

    def save(self, folder: str | Path) -> Path:
        path = Path(folder) / VOCAB_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"words": self.words, "chars": self.chars, "counts": self.counts},
                                   ensure_ascii=False), encoding="utf-8")
        return path

    @classmethod
    def load(cls, folder: str | Path) -> WordCharVocab:
        path = Path(folder) / VOCAB_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: a BiLSTM model folder keeps its vocabulary there.")
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls(data["words"], data["chars"], data.get("counts"))


def load_word_vectors(path: str | Path, vocab: WordCharVocab, dim: int, seed: int = 0) -> torch.Tensor:
    """Embedding matrix from a GloVe-format text file (``word v1 ... vdim`` a line).

    Words are looked up as the vocabulary does (exact, then lower-cased); words without a
    vector get a uniform random one in ``±sqrt(3 / dim)`` (NCRF++), ``<pad>`` zeros.
    """
    g = torch.Generator().manual_seed(seed)
    scale = (3.0 / dim) ** 0.5
    matrix = (torch.rand(len(vocab), dim, generator=g) * 2 - 1) * scale
    matrix[0] = 0
    found = 0
    wanted = {w: i for i, w in enumerate(vocab.words)}
    lower = {}
    for w, i in wanted.items():
        lower.setdefault(w.lower(), []).append(i)
    for key, values in iter_vector_file(path, dim, what="a word", hint="set --word_dim to the file's size"):
        ids = [wanted[key]] if key in wanted else lower.get(key, [])
        if ids:
            vec = torch.tensor([float(x) for x in values])
            for i in ids:
                matrix[i] = vec
            found += 1
    return matrix


def iter_vector_file(path: str | Path, dim: int, *, what: str, hint: str):
    """``(key, [dim number strings])`` per line of a GloVe-format text file; a word2vec-style header
    ("count dim") is skipped, any other line of the wrong width is an error naming file and line."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip().split(" ")
            if len(parts) != dim + 1:
                if lineno == 1 and len(parts) == 2:
                    continue
                raise ValueError(f"{path}, line {lineno}: expected {what} and {dim} numbers, got {len(parts) - 1}; "
                                 f"{hint}.")
            yield parts[0], parts[1:]


def char_ngrams(word: str) -> list[str]:
    """The keys torchtext's ``CharNGram`` averages for a word: ``{n}gram-{chars}`` for n = 2, 3, 4 over
    ``#BEGIN#`` + the characters + ``#END#`` (the boundary markers count as one character each)."""
    chars = ["#BEGIN#", *word, "#END#"]
    return [f"{n}gram-{''.join(chars[i:i + n])}" for n in (2, 3, 4) for i in range(len(chars) - n + 1)]


def load_char_ngram_vectors(path: str | Path | None, vocab: WordCharVocab, dim: int = 100, seed: int = 0) -> torch.Tensor:
    """Per-word character n-gram vectors, as the CrossNER release built them with ``torchtext.vocab.CharNGram``.

    ``path`` is a text file of ``{n}gram-{chars} v1 ... vdim`` lines (the ``jmt_pre-trained_embeddings``
    file of Hashimoto et al. 2017 that torchtext downloads; any file of that format works). A
    word's vector is the mean of the vectors of its n-grams found in the file, zeros when none is
    (torchtext's ``unk_init``). Without a file (none can be had offline) every word gets a random
    normal vector, as the release's other embeddings start; ``<pad>`` stays zeros.
    """
    g = torch.Generator().manual_seed(seed)
    matrix = torch.randn(len(vocab), dim, generator=g)
    matrix[0] = 0
    if path is None:
        return matrix
    wanted: dict[str, list[int]] = {}
    for i, word in enumerate(vocab.words[3:], start=3):
        for key in char_ngrams(word):
            wanted.setdefault(key, []).append(i)
    sums = torch.zeros(len(vocab), dim, dtype=torch.float64)
    counts = torch.zeros(len(vocab), dtype=torch.float64)
    for key, values in iter_vector_file(path, dim, what="an n-gram key", hint="set --char_ngram_dim to the file's size"):
        ids = wanted.get(key)
        if ids:
            vec = torch.tensor([float(x) for x in values], dtype=torch.float64)
            for i in ids:  # a word containing the same n-gram twice counts it twice, as torchtext does
                sums[i] += vec
                counts[i] += 1
    matrix[3:] = 0
    found = counts > 0
    matrix[found] = (sums[found] / counts[found].unsqueeze(1)).float()
    return matrix
