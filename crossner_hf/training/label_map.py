"""The source's entity types matched to the target's: ``--source_label_map person=x_person,...``.

Joint and pretrain-finetune train CoNLL-2003 (the source) with the target's output layer. A source type the target
has by name (``person`` in every CrossNER domain) trains the target's row; one it lacks becomes an extra row, learnt
from the source alone and masked at prediction. A user whose types are CoNLL-2003's under other names (``x_person``,
``PER``) gains nothing from the source unless the two are matched: ``source_label_map`` maps a source type onto a
target type, so ``B-person`` of CoNLL-2003 is trained as ``B-x_person`` (and no ``person`` row is added).

A map is never guessed silently: :func:`propose_label_map` finds the types that match up to a prefix (``x_``), case
or CoNLL-2003's short names (``PER``, ``ORG``, ``LOC``, ``MISC``), and :func:`check_label_map` logs the flag that
would apply it.

Example:
    >>> parse_label_map("person=x_person, organisation=x_org")
    {'person': 'x_person', 'organisation': 'x_org'}
    >>> propose_label_map(["person", "organisation", "location", "misc"], ["x_person", "X_Organisation", "LOC", "lab"])
    {'person': 'x_person', 'organisation': 'X_Organisation', 'location': 'LOC'}
    >>> map_source_labels(["O", "B-person", "I-person", "B-misc"], {"person": "x_person"})
    ['O', 'B-x_person', 'I-x_person', 'B-misc']
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence

logger = logging.getLogger(__name__)

FLAG = "--source_label_map"

# CoNLL-2003's own short names (its files tag PER, ORG, LOC, MISC) and the American spelling
ALIASES: dict[str, tuple[str, ...]] = {
    "person": ("per",), "organisation": ("org", "organization"), "location": ("loc",), "misc": ("miscellaneous",),
}


def parse_label_map(value: str | Mapping[str, str] | None) -> dict[str, str] | None:
    """``source=target`` pairs (``person=x_person,organisation=x_org``), a JSON object, or a mapping, as a dict of
    types; a malformed one is a one-line ``ValueError`` saying the form."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("{"):
            try:
                value = json.loads(text)
            except json.JSONDecodeError as err:
                raise ValueError(f"{FLAG} {text!r}: not a JSON object ({err.msg}); write person=x_person,"
                                 "organisation=x_organisation.") from None
        else:
            pairs = [p.strip() for p in text.split(",") if p.strip()]
            bad = [p for p in pairs if p.count("=") != 1]
            if bad:
                raise ValueError(f"{FLAG} {text!r}: {bad[0]!r} is not source=target; write person=x_person,"
                                 "organisation=x_organisation.")
            value = dict(tuple(part.strip() for part in p.split("=")) for p in pairs)
    if not isinstance(value, Mapping):
        raise ValueError(f"{FLAG}: got a {type(value).__name__}; give source=target pairs or a dict.")
    out: dict[str, str] = {}
    for source, target in value.items():
        if not isinstance(source, str) or not isinstance(target, str) or not source or not target:
            raise ValueError(f"{FLAG}: {source!r}={target!r}: both sides must be type names, e.g. person=x_person.")
        for side in (source, target):
            if side[:2] in ("B-", "I-"):
                raise ValueError(f"{FLAG}: {source}={target}: name types, not tags (person=x_person, not "
                                 "B-person=B-x_person).")
        out[source] = target
    return out


def types_of(labels: Sequence[str]) -> list[str]:
    """The entity types of a BIO label list, in their order."""
    return list(dict.fromkeys(t[2:] for t in labels if t != "O"))


def _matches(target_type: str, name: str) -> bool:
    """``target_type`` is ``name`` up to case and a prefix ending in a separator (``x_person``, ``Person``)."""
    return re.fullmatch(rf"(?:.*[^0-9a-z])?{re.escape(name)}", target_type.lower()) is not None


def propose_label_map(source_types: Sequence[str], target_types: Sequence[str]) -> dict[str, str]:
    """Source types the target has under another name: the same up to case and a prefix (``x_person``,
    ``Person``), or CoNLL-2003's short name (``PER``). A type the target has as it is, or that several target
    types could stand for, is left out: a proposal, never applied by itself."""
    present = set(target_types)
    proposal: dict[str, str] = {}
    for source in source_types:
        if source in present:
            continue
        names = {source.lower(), *ALIASES.get(source, ())}
        matches = [t for t in target_types if any(_matches(t, n) for n in names)]
        if len(matches) == 1:
            proposal[source] = matches[0]
    return proposal


def format_label_map(label_map: Mapping[str, str]) -> str:
    """The map as the flag takes it: ``person=x_person,organisation=x_org``."""
    return ",".join(f"{s}={t}" for s, t in label_map.items())


def check_label_map(label_map: Mapping[str, str] | None, source_labels: Sequence[str], target_labels: Sequence[str],
                    source_name: str, target_name: str) -> None:
    """A one-line ``ValueError`` for a type the source or the target does not have; without a map, the proposed
    one (if any) logged with the flag that applies it."""
    source_types, target_types = types_of(source_labels), types_of(target_labels)
    if label_map is None:
        proposal = propose_label_map(source_types, target_types)
        if proposal:
            logger.warning("%s's types %s look like %s's %s: pass %s %s (source_label_map= in Python) to train them "
                           "as one type; not applied.", target_name, ", ".join(proposal.values()), source_name,
                           ", ".join(proposal), FLAG, format_label_map(proposal))
        return
    for source, target in label_map.items():
        if source not in source_types:
            raise ValueError(f"{FLAG} {source}={target}: {source_name} has no type {source!r} (its types: "
                             f"{', '.join(source_types)}); fix the left side.")
        if target not in target_types:
            raise ValueError(f"{FLAG} {source}={target}: {target_name} has no type {target!r} (its types: "
                             f"{', '.join(target_types)}); fix the right side.")
    logger.info("%s: %s's %s trained as %s's %s.", FLAG, source_name, ", ".join(label_map), target_name,
                ", ".join(label_map.values()))


def map_source_labels(source_labels: Sequence[str], label_map: Mapping[str, str] | None) -> list[str]:
    """The source's tags renamed by ``label_map`` (``B-person`` -> ``B-x_person``); others unchanged."""
    if not label_map:
        return list(source_labels)
    return [t if t == "O" or t[2:] not in label_map else f"{t[:2]}{label_map[t[2:]]}" for t in source_labels]


def head_labels_with_source(target_labels: Sequence[str], source_labels: Sequence[str],
                            label_map: Mapping[str, str] | None = None) -> list[str]:
    """``target_labels`` then the source's tags (renamed by ``label_map``) the target lacks: the head of a
    schedule that trains on the source. Mapped types add nothing, they are the target's own."""
    present = set(target_labels)
    extra = [t for t in map_source_labels(source_labels, label_map) if t not in present]
    return [*target_labels, *dict.fromkeys(extra)]
