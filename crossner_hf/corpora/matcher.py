"""Finding entity-list mentions in raw text: an Aho-Corasick matcher on word boundaries.

The CrossNER corpus levels select sentences by the entity mentions they contain. This
module finds those mentions for an entity list (``surface form -> type``) with one
pass of a ``pyahocorasick`` automaton per text, whatever the list size.

Matching rules (the same for every caller):

* **Word boundaries.** A match may neither start nor end inside a word: the character
  before its start and its first character must not both be word characters, and the
  same holds for its last character and the character after it. Word characters are
  those for which ``str.isalnum()`` is true, plus ``_``. So ``Iran`` does not match in
  ``Iranian``, while ``U.S.`` matches in ``the U.S. Senate`` and ``Russia`` in
  ``(Russia)``.
* **Leftmost-longest.** Of all boundary-respecting matches, the one starting first wins;
  among those starting at the same place the longest wins; matches overlapping an
  already chosen one are dropped, and the scan goes on after it. ``United Russia`` in
  ``the United Russia party`` is one mention, not ``United Russia`` plus ``Russia``.
* **Case.** Case-sensitive by default (``Labour`` the party vs ``labour`` the noun);
  ``case_sensitive=False`` folds both the list and the text to lower case.

Example:
    >>> m = EntityMatcher({"Iran": "country", "United Russia": "politicalparty",
    ...                    "Russia": "country"})
    >>> [x.surface for x in m.find("Iranian voters and United Russia in Russia")]
    ['United Russia', 'Russia']
    >>> m.find("Iran")[0]
    EntityMention(start=0, end=4, surface='Iran', type='country')
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from crossner_hf.extras import require

ahocorasick = require("ahocorasick", "corpora")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class EntityMention:
    """One entity mention: ``text[start:end] == surface``, of entity type ``type``."""

    start: int
    end: int
    surface: str
    type: str


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _fold(text: str) -> str:
    """Lower-case ``text`` without changing its length, so offsets stay valid.

    A few characters lower-case to two (``'İ'.lower()`` is ``'i̇'``); those are kept
    as they are rather than shifting every later offset.
    """
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(low if len(low := ch.lower()) == 1 else ch for ch in text)


class EntityMatcher:
    """Leftmost-longest, word-boundary matching of an entity list in text.

    Args:
        entities: ``surface form -> entity type``. Surfaces are matched verbatim
            (after stripping outer whitespace); empty surfaces are ignored.
        case_sensitive: if false, surfaces and texts are lower-cased before matching;
            when two surfaces fold to the same key, the first one's type is kept.

    Pickles (the automaton is rebuilt from the list), so it can run inside
    ``datasets.Dataset.map(num_proc=...)``.
    """

    def __init__(self, entities: Mapping[str, str], *, case_sensitive: bool = True) -> None:
        if not isinstance(entities, Mapping):
            raise ValueError(
                f"EntityMatcher(entities=...) needs a mapping surface -> type, got "
                f"{type(entities).__name__}; load a TSV list with crossner_hf.corpora.load_entity_list(path)."
            )
        self.case_sensitive = case_sensitive
        self.entities: dict[str, str] = {}
        for surface, etype in entities.items():
            surface = surface.strip()
            if surface and etype:
                self.entities[surface] = etype
        if not self.entities:
            raise ValueError(
                "EntityMatcher got an empty entity list: pass at least one "
                "'surface -> type' entry (check the TSV file or the labeled data it came from)."
            )
        self._automaton = self._build()

    def _build(self) -> ahocorasick.Automaton:
        automaton = ahocorasick.Automaton()
        for surface, etype in self.entities.items():
            key = surface if self.case_sensitive else _fold(surface)
            if key not in automaton:
                automaton.add_word(key, (len(key), etype))
        automaton.make_automaton()
        return automaton

    def __len__(self) -> int:
        return len(self.entities)

    def __repr__(self) -> str:
        return f"EntityMatcher({len(self)} entries, case_sensitive={self.case_sensitive})"

    def __getstate__(self) -> dict[str, Any]:
        return {"entities": self.entities, "case_sensitive": self.case_sensitive}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.entities = state["entities"]
        self.case_sensitive = state["case_sensitive"]
        self._automaton = self._build()

    @property
    def fingerprint(self) -> str:
        """A stable hash of the list and options, for ``datasets`` cache fingerprints."""
        digest = hashlib.sha256(f"case_sensitive={self.case_sensitive}\n".encode())
        for surface in sorted(self.entities):
            digest.update(f"{surface}\t{self.entities[surface]}\n".encode())
        return digest.hexdigest()[:32]

    def find(self, text: str) -> list[EntityMention]:
        """Non-overlapping, leftmost-longest, word-bounded mentions in ``text``, in order."""
        haystack = text if self.case_sensitive else _fold(text)
        n = len(text)
        candidates: list[tuple[int, int, str]] = []
        for last, (length, etype) in self._automaton.iter(haystack):
            start, end = last + 1 - length, last + 1
            # The boundary test runs on the original text: folding keeps word-ness.
            if start > 0 and _is_word_char(text[start - 1]) and _is_word_char(text[start]):
                continue
            if end < n and _is_word_char(text[end - 1]) and _is_word_char(text[end]):
                continue
            candidates.append((start, end, etype))
        if not candidates:
            return []
        candidates.sort(key=lambda c: (c[0], c[0] - c[1]))
        mentions: list[EntityMention] = []
        covered_until = 0
        for start, end, etype in candidates:
            if start >= covered_until:
                mentions.append(EntityMention(start, end, text[start:end], etype))
                covered_until = end
        return mentions

    def find_all(self, texts: Iterable[str]) -> list[list[EntityMention]]:
        """``find`` on each text; the shape of a ``mention_fn`` for corpus levels."""
        return [self.find(text) for text in texts]

    __call__ = find_all
