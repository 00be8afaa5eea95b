"""CrossNER's type hierarchy and entity-level confusion: where cross-domain NER goes wrong.

CrossNER's fine types sit under coarse ones (a politician is a person, a band an
organisation), and most cross-domain errors stay inside one branch: the CrossNER paper
reports that 84.81% of ``person`` entities in music are predicted as ``musicalartist``.
:data:`COARSE_TYPES` is the documented fine-to-coarse map (one source of truth for the
report and the NER-BERT confusion command); :func:`entity_confusion` matches gold and
predicted entities and counts, per gold type, what was predicted, with ``"no entity"`` for
missed and spurious entities.

Matching, per sentence (entities from :func:`crossner_hf.data.entities.entity_spans`, the
conlleval reading): a gold entity with a predicted entity on exactly its words is *correct*
(same type) or a *wrong type*; else, one overlapping its words (the first by position) makes
it a *wrong boundary* (any type); else it is *missed*. A predicted entity matched to no gold
entity is *spurious*.

Example:
    >>> c = entity_confusion([["B-politician", "I-politician", "O"]], [["B-person", "I-person", "O"]])
    >>> c.counts[("politician", "person")], c.near_miss_share()
    (1, 1.0)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crossner_hf.data.entities import entity_spans

NO_ENTITY = "no entity"
OTHER_TYPES = "other types"
"""The row and column that hold every type beyond the :data:`MAX_TYPES` most frequent (:meth:`Confusion.capped`)."""
MAX_TYPES = 30
"""Types a matrix or per-type table shows one by one: a matrix grows with the square of its types (10,000 types
would be gigabytes of HTML), so the rest are folded into :data:`OTHER_TYPES` and the page says so."""
"""Row/column of the confusion matrix for missed (gold, no prediction) and spurious entities."""

COARSE_TYPES: dict[str, str] = {
    # people
    "person": "person", "politician": "person", "scientist": "person", "writer": "person",
    "musicalartist": "person", "researcher": "person",
    # organisations
    "organisation": "organisation", "politicalparty": "organisation", "band": "organisation",
    "university": "organisation", "conference": "organisation", "magazine": "organisation",
    "academicjournal": "organisation",
    # places
    "location": "location", "country": "location",
    # works, events and the rest keep their own names (their own branch)
}
"""Fine CrossNER type -> coarse type. Types not listed are their own coarse type.

People: person, politician, scientist, writer, musicalartist, researcher. Organisations:
organisation, politicalparty, band, university, and the publishing/meeting bodies
conference, magazine, academicjournal. Places: location, country. Everything else
(album, song, book, poem, election, event, award, algorithm, ...) stays as it is.
"""


def coarse_type(fine: str) -> str:
    """The coarse type of a fine CrossNER type (``NO_ENTITY`` stays itself)."""
    return COARSE_TYPES.get(fine, fine)


def has_hierarchy(types: Iterable[str]) -> bool:
    """Whether any of ``types`` has a place in the CrossNER fine-to-coarse map (:data:`COARSE_TYPES`).

    A user's own types usually have none: then coarse scores equal fine ones and branch shares are
    meaningless, so the report and ``confusion`` say the analysis is skipped instead of printing them.
    """
    return any(t in COARSE_TYPES for t in types)


def to_coarse_tags(tags: Sequence[str]) -> list[str]:
    """Per-word tags with each type replaced by its coarse type (``B-politician`` -> ``B-person``)."""
    return [t if t == "O" else f"{t[:2]}{coarse_type(t[2:])}" for t in tags]


ERROR_KINDS = ("wrong-type", "wrong-boundary", "missed", "spurious")
"""The kinds of entity errors :func:`entity_confusion` tells apart (report and confusion tables use these)."""

ENTITY_KINDS = ("correct", *ERROR_KINDS)
"""Every ``EntityError.kind``: a match, or one of :data:`ERROR_KINDS`."""


@dataclass
class EntityError:
    """One error (or match) of :func:`entity_confusion`: ``kind`` is correct, wrong-type,
    wrong-boundary, missed or spurious; spans are inclusive word indices."""

    sentence: int
    kind: str
    gold_type: str
    pred_type: str
    gold_span: tuple[int, int] | None
    pred_span: tuple[int, int] | None


@dataclass
class Confusion:
    """Counts per ``(gold type, predicted type)`` cell, and every matched pair behind them. A :meth:`capped` one
    lists the ``folded`` types under :data:`OTHER_TYPES` and keeps the ``whole`` one for its summaries."""

    counts: Counter = field(default_factory=Counter)
    items: list[EntityError] = field(default_factory=list)
    folded: tuple[str, ...] = ()
    whole: Confusion | None = field(default=None, repr=False)

    def capped(self, top: int = MAX_TYPES) -> Confusion:
        """This confusion with only the ``top`` types of most entities (gold and predicted) as their own rows and
        columns, the others folded into :data:`OTHER_TYPES` (itself when there are at most ``top + 1`` types);
        the type-error summaries still count every type."""
        frequency: Counter = Counter()
        for item in self.items:
            frequency.update(t for t in (item.gold_type, item.pred_type) if t != NO_ENTITY)
        if len(frequency) <= top + 1:
            return self
        kept = {t for t, _ in sorted(frequency.items(), key=lambda kv: (-kv[1], kv[0]))[:top]}

        def fold(t: str) -> str:
            return t if t in kept or t == NO_ENTITY else OTHER_TYPES

        out = Confusion(folded=tuple(sorted(set(frequency) - kept)), whole=self)
        for i in self.items:
            out.items.append(EntityError(i.sentence, i.kind, fold(i.gold_type), fold(i.pred_type), i.gold_span,
                                         i.pred_span))
            out.counts[(fold(i.gold_type), fold(i.pred_type))] += 1
        return out

    def cells(self) -> dict[tuple[str, str], list[EntityError]]:
        out: dict[tuple[str, str], list[EntityError]] = defaultdict(list)
        for item in self.items:
            out[(item.gold_type, item.pred_type)].append(item)
        return dict(out)

    def types(self) -> list[str]:
        """Row/column order: gold and predicted types alphabetically, then ``no entity``."""
        seen = {t for pair in self.counts for t in pair} - {NO_ENTITY, OTHER_TYPES}
        return sorted(seen) + ([OTHER_TYPES] if self.folded else []) + [NO_ENTITY]

    def row_percentages(self) -> dict[tuple[str, str], float]:
        totals: Counter = Counter()
        for (g, _), n in self.counts.items():
            totals[g] += n
        return {(g, p): 100.0 * n / totals[g] for (g, p), n in self.counts.items() if totals[g]}

    def type_errors(self) -> list[EntityError]:
        """Errors where both sides are entities of different types (wrong type, or wrong boundary and type)."""
        if self.whole is not None:
            return self.whole.type_errors()
        return [i for i in self.items if NO_ENTITY not in (i.gold_type, i.pred_type) and i.gold_type != i.pred_type]

    def near_miss_share(self) -> float | None:
        """Share of type errors whose two types lie in one coarse branch (None without type errors, and None when
        no type is in the CrossNER fine-to-coarse map: every type is then its own branch and the share says
        nothing)."""
        if self.whole is not None:
            return self.whole.near_miss_share()
        errors = self.type_errors()
        if not errors or not has_hierarchy(self.types()):
            return None
        return sum(coarse_type(e.gold_type) == coarse_type(e.pred_type) for e in errors) / len(errors)

    def format(self) -> str:
        """The matrix as text: counts and row percentages, gold types down, predictions across."""
        types = self.types()
        pct = self.row_percentages()
        width = max(len(t) for t in types) + 2
        lines = ["gold \\ predicted".ljust(width) + "".join(t[:12].rjust(14) for t in types)]
        for g in types:
            if not any(self.counts[(g, p)] for p in types):
                continue
            cells = "".join(
                (f"{self.counts[(g, p)]} ({pct.get((g, p), 0):.0f}%)" if self.counts[(g, p)] else "·").rjust(14)
                for p in types
            )
            lines.append(g.ljust(width) + cells)
        if self.folded:
            lines.append(f"{len(self.folded)} less frequent types are folded into '{OTHER_TYPES}' (the {len(types) - 2} "
                         "types of most entities are shown one by one)")
        share = self.near_miss_share()
        if share is not None:
            lines.append(f"type errors inside one coarse branch: {100 * share:.2f}% of {len(self.type_errors())}")
        elif self.type_errors():
            lines.append("type errors inside one coarse branch: skipped (none of these types is in the CrossNER "
                         "fine-to-coarse map, so every type is its own branch)")
        return "\n".join(lines)


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] <= b[1] and b[0] <= a[1]


def entity_confusion(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> Confusion:
    """Entity-level confusion of predicted against gold tag sequences (see the module docstring)."""
    if len(gold) != len(pred):
        raise ValueError(f"entity_confusion: {len(gold)} gold sentences but {len(pred)} predicted ones.")
    result = Confusion()
    for s, (g_tags, p_tags) in enumerate(zip(gold, pred)):
        if len(g_tags) != len(p_tags):
            raise ValueError(f"Sentence {s}: {len(g_tags)} gold tags but {len(p_tags)} predicted tags.")
        golds = [(t, (a, b)) for t, a, b in entity_spans(g_tags)]
        preds = [(t, (a, b)) for t, a, b in entity_spans(p_tags)]
        used: set[int] = set()
        exact = {span: i for i, (_, span) in enumerate(preds)}
        pending = []
        for g_type, g_span in golds:
            i = exact.get(g_span)
            if i is not None and i not in used:
                used.add(i)
                p_type = preds[i][0]
                kind = "correct" if p_type == g_type else "wrong-type"
                result.items.append(EntityError(s, kind, g_type, p_type, g_span, g_span))
            else:
                pending.append((g_type, g_span))
        for g_type, g_span in pending:
            i = next((k for k, (_, span) in enumerate(preds) if k not in used and _overlaps(span, g_span)), None)
            if i is None:
                result.items.append(EntityError(s, "missed", g_type, NO_ENTITY, g_span, None))
            else:
                used.add(i)
                result.items.append(EntityError(s, "wrong-boundary", g_type, preds[i][0], g_span, preds[i][1]))
        for k, (p_type, p_span) in enumerate(preds):
            if k not in used:
                result.items.append(EntityError(s, "spurious", NO_ENTITY, p_type, None, p_span))
    for item in result.items:
        result.counts[(item.gold_type, item.pred_type)] += 1
    return result

