"""The RNN rows' pre-trained vectors: which file each RNN cell of a plan reads, and what a plan says without them.

The papers' RNN rows start from pre-trained vectors: CrossNER's BiLSTM-CRF and Coach from GloVe words and the
character n-gram embeddings of Hashimoto et al. (002:429-431), which the CrossNER release reads as
``glove.6B.300d.txt`` and torchtext's ``CharNGram`` (its ``README.md:91``, ``src/config.py:30``); CDLM's models
and its single-task baselines from GloVe 100d (004:835-837); the multi-cell LSTM from GloVe 100d (the
Multi-Cell_LSTM release's ``train.config``). The sizes differ, so ``reproduce`` takes one file per size:
``--word_vectors`` (100d), ``--word_vectors_300d`` and ``--char_ngram_vectors`` (100d), and carries each to every
cell that reads it (:class:`RNNVectors`). At ``--scale paper`` a cell whose file is not given is 'missing input'
(its inputs name the flag), never a silent random start; ``--random_vectors`` opts into random vectors and the
table's notes say so. At ``cpu`` random vectors are the documented cut unless the files are given; ``smoke``'s
RNNs are 16-d, so it takes none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from crossner_hf.grid import Cell

KINDS = {
    "word_vectors": (100, "GloVe 6B 100d, glove.6B.100d.txt: CDLM's models and STM baselines (004:835-837) and the "
                          "multi-cell LSTM"),
    "word_vectors_300d": (300, "GloVe 6B 300d, glove.6B.300d.txt: CrossNER's BiLSTM-CRF and Coach (002:429-431; "
                               "the release's README.md:91)"),
    "char_ngram_vectors": (100, "character n-gram vectors of Hashimoto et al., torchtext's CharNGram: CrossNER's "
                                "BiLSTM-CRF and Coach word + char rows (002:429-431)"),
}
"""Each vectors flag of ``reproduce``: (the vectors' size, which file and which rows read it)."""

RANDOM_NOTE = ("word vectors: random for the RNN rows ({rows}) instead of the papers' pre-trained ones (GloVe and "
               "CharNGram, 002:429-431; GloVe 100d, 004:835-837){why}")


def file_width(path: str | Path) -> int | None:
    """The number of values a line of a GloVe-format file holds (a word2vec header line skipped); ``None`` for an
    empty file."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.rstrip().split(" ")
            if lineno == 1 and len(parts) == 2:
                continue  # word2vec's "count dim" header, as the RNN commands skip it
            return len(parts) - 1
    return None


@dataclass(frozen=True)
class RNNVectors:
    """The vectors files ``reproduce`` was given (absolute paths), and whether random vectors were asked for."""

    word_vectors: str | None = None
    word_vectors_300d: str | None = None
    char_ngram_vectors: str | None = None
    random_vectors: bool = False

    @classmethod
    def from_flags(cls, scale: str, *, word_vectors: str | None = None, word_vectors_300d: str | None = None,
                   char_ngram_vectors: str | None = None, random_vectors: bool = False) -> RNNVectors:
        """Check the files against their flag's size (when they exist: a missing one is the cell's 'missing
        input'); raises ``ValueError`` naming the flag and the fix."""
        given = {"word_vectors": word_vectors, "word_vectors_300d": word_vectors_300d,
                 "char_ngram_vectors": char_ngram_vectors}
        named = [f"--{flag}" for flag, path in given.items() if path]
        if named and random_vectors:
            raise ValueError(f"--random_vectors with {' '.join(named)}: give the files or ask for random vectors, "
                             "not both.")
        if named and scale == "smoke":
            raise ValueError(f"{' '.join(named)}: --scale smoke trains 16-d RNNs on random vectors; give the "
                             "vectors files at --scale cpu or paper.")
        resolved = {}
        for flag, path in given.items():
            if not path:
                resolved[flag] = None
                continue
            resolved[flag] = str(Path(path).resolve())
            width, what = KINDS[flag]
            found = file_width(path) if Path(path).is_file() else width
            if found != width:
                raise ValueError(f"--{flag} {path}: its first vector has {found} values, the rows that read it are "
                                 f"{width}-d ({what}); give the {width}-d file.")
        return cls(**resolved, random_vectors=random_vectors)

    def settings(self, scale: str, *files: str) -> tuple[dict[str, str], tuple[str, ...]]:
        """(settings, inputs) of a cell that reads ``files`` (names of :data:`KINDS`): each given file as the
        command's setting and an input the grid checks; at ``--scale paper`` without ``--random_vectors`` a file
        not given is a placeholder value and a 'missing input' naming the flag; otherwise nothing (random
        vectors)."""
        settings: dict[str, str] = {}
        inputs: list[str] = []
        for name in files:
            # the RNN commands call GloVe of any size --word_vectors
            setting = "char_ngram_vectors" if name == "char_ngram_vectors" else "word_vectors"
            path = getattr(self, name)
            if path:
                settings[setting] = path
                inputs.append(path)
            elif scale == "paper" and not self.random_vectors:
                settings[setting] = f"<{name}>"
                inputs.append(f"--{name} FILE ({KINDS[name][1].split(':')[0]})")
        return settings, tuple(inputs)


def vector_files(command: str, settings: Mapping[str, Any]) -> tuple[str, ...]:
    """The :data:`KINDS` an RNN cell reads, from its command and settings: CrossNER's ``crossner`` / ``coach``
    networks GloVe 300d (and CharNGram unless ``char_ngram_dim`` 0), everything else GloVe 100d."""
    if command == "bilstm-crf" and settings.get("architecture") in ("crossner", "coach"):
        words_only = str(settings.get("char_ngram_dim")) == "0"
        return ("word_vectors_300d",) if words_only else ("word_vectors_300d", "char_ngram_vectors")
    return ("word_vectors",)


RNN_COMMANDS = ("bilstm-crf", "cdlm", "multicell")


def with_vectors(cells: Sequence[Cell], scale: str, vectors: RNNVectors) -> list[Cell]:
    """``cells`` with the vectors files carried to every RNN cell (:meth:`RNNVectors.settings`): right after its
    ``config`` preset (the command line reads as the preset, then what this cell adds), else first."""
    out = []
    for cell in cells:
        if cell.command not in RNN_COMMANDS:
            out.append(cell)
            continue
        added, inputs = vectors.settings(scale, *vector_files(cell.command, cell.settings))
        preset = {"config": cell.settings["config"]} if "config" in cell.settings else {}
        out.append(replace(cell, settings={**preset, **added, **cell.settings}, inputs=(*cell.inputs, *inputs)))
    return out


def random_vector_note(cells: Sequence[Cell], scale: str, vectors: RNNVectors) -> tuple[str, ...]:
    """The table's note when an RNN cell of the plan starts from random vectors, naming its rows and why; none
    otherwise (every file given, or no RNN cell)."""
    if scale == "smoke" or (scale == "paper" and not vectors.random_vectors):
        return ()  # smoke's numbers mean nothing; at paper scale a cell without its file is 'missing input'
    rows: list[str] = []
    for cell in cells:
        if cell.command in RNN_COMMANDS and cell.row not in rows:
            needed = vector_files(cell.command, cell.settings)
            if not all(getattr(vectors, name) for name in needed):
                rows.append(cell.row)
    if not rows:
        return ()
    why = (" (--random_vectors; give --word_vectors, --word_vectors_300d and --char_ngram_vectors for the papers' "
           "inputs)" if scale == "paper" else " (none offline here; --word_vectors, --word_vectors_300d and "
           "--char_ngram_vectors give them)")
    return (RANDOM_NOTE.format(rows=", ".join(rows), why=why),)
