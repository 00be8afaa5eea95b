"""Label schemas of CrossNER: the one source of truth for every label list in the project.

The per-domain lists are the original release's lists in their exact id order
(``src/dataloader.py`` of zliucr/CrossNER, commit 2e7ba2a); model heads, ``ClassLabel``
features and metric tables all take their order from here.

Example:
    >>> from crossner_hf.data.labels import LABELS, entity_types, to_merged_ids
    >>> LABELS["politics"][:3]
    ['O', 'B-country', 'B-politician']
    >>> entity_types("conll2003")
    ['person', 'organisation', 'location', 'misc']
    >>> MERGED_LABELS[to_merged_ids("politics", [2, 3])[0]]
    'B-politician'

The source's types matched to the target's (``--source_label_map``, the section at the end):

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
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

SOURCE_DOMAIN = "conll2003"
DOMAINS: tuple[str, ...] = ("politics", "science", "music", "literature", "ai")
CONFIGS: tuple[str, ...] = (SOURCE_DOMAIN, *DOMAINS)

LABELS: dict[str, list[str]] = {
    "politics": [
        "O", "B-country", "B-politician", "I-politician", "B-election", "I-election",
        "B-person", "I-person", "B-organisation", "I-organisation", "B-location",
        "B-misc", "I-location", "I-country", "I-misc", "B-politicalparty",
        "I-politicalparty", "B-event", "I-event",
    ],
    "science": [
        "O", "B-scientist", "I-scientist", "B-person", "I-person", "B-university",
        "I-university", "B-organisation", "I-organisation", "B-country", "I-country",
        "B-location", "I-location", "B-discipline", "I-discipline", "B-enzyme",
        "I-enzyme", "B-protein", "I-protein", "B-chemicalelement", "I-chemicalelement",
        "B-chemicalcompound", "I-chemicalcompound", "B-astronomicalobject",
        "I-astronomicalobject", "B-academicjournal", "I-academicjournal", "B-event",
        "I-event", "B-theory", "I-theory", "B-award", "I-award", "B-misc", "I-misc",
    ],
    "music": [
        "O", "B-musicgenre", "I-musicgenre", "B-song", "I-song", "B-band", "I-band",
        "B-album", "I-album", "B-musicalartist", "I-musicalartist",
        "B-musicalinstrument", "I-musicalinstrument", "B-award", "I-award", "B-event",
        "I-event", "B-country", "I-country", "B-location", "I-location",
        "B-organisation", "I-organisation", "B-person", "I-person", "B-misc", "I-misc",
    ],
    "literature": [
        "O", "B-book", "I-book", "B-writer", "I-writer", "B-award", "I-award",
        "B-poem", "I-poem", "B-event", "I-event", "B-magazine", "I-magazine",
        "B-literarygenre", "I-literarygenre", "B-country", "I-country", "B-person",
        "I-person", "B-location", "I-location", "B-organisation", "I-organisation",
        "B-misc", "I-misc",
    ],
    "ai": [
        "O", "B-field", "I-field", "B-task", "I-task", "B-product", "I-product",
        "B-algorithm", "I-algorithm", "B-researcher", "I-researcher", "B-metrics",
        "I-metrics", "B-programlang", "I-programlang", "B-conference", "I-conference",
        "B-university", "I-university", "B-country", "I-country", "B-person",
        "I-person", "B-organisation", "I-organisation", "B-location", "I-location",
        "B-misc", "I-misc",
    ],
    "conll2003": [
        "O", "B-person", "I-person", "B-organisation", "I-organisation",
        "B-location", "I-location", "B-misc", "I-misc",
    ],
}


NERBERT_BASE_CONFIGS: tuple[str, ...] = ("all", "4types")
"""Configs every NER-BERT corpus has: every DBpedia category, or person / location / organisation / ENTITY."""

NERBERT_MERGED_CATEGORIES = 212
"""The paper's merged config (section 4.3): categories merged into their parents until 212 remain."""


def nerbert_merged_config(n: int = NERBERT_MERGED_CATEGORIES) -> str:
    """The config name of the corpus with its categories merged down to ``n``: ``212types``."""
    return f"{n}types"


def tag_type(tag: str) -> str | None:
    """``'B-person' -> 'person'``; ``'O' -> None``. The one place a prefix is stripped."""
    return None if tag == "O" else tag[2:]


def entity_types(config: str) -> list[str]:
    """Entity types of ``config`` in the order they first appear in its label list."""
    types: list[str] = []
    for tag in labels_for(config):
        if tag != "O" and tag_type(tag) not in types:
            types.append(tag_type(tag))
    return types


def labels_for(config: str) -> list[str]:
    """The label list of ``config``; a clear error for an unknown name."""
    try:
        return LABELS[config]
    except KeyError:
        raise ValueError(
            f"Unknown CrossNER config {config!r}: choose one of {', '.join(CONFIGS)}."
        ) from None


ALL_TYPES: list[str] = sorted({t for config in CONFIGS for t in entity_types(config)})
"""The 39 entity types of CrossNER, alphabetical."""

MERGED_LABELS: list[str] = ["O"] + [f"{p}-{t}" for t in ALL_TYPES for p in ("B", "I")]
"""The 79-label schema of the Hub copy ``DFKI-SLT/cross_ner``: ``O``, then B-/I- of each type."""

_MERGED_INDEX = {tag: i for i, tag in enumerate(MERGED_LABELS)}


def to_merged_ids(config: str, ids: Iterable[int]) -> list[int]:
    """Map label ids of ``config`` to ids of the 79-label merged schema."""
    names = labels_for(config)
    return [_MERGED_INDEX[names[i]] for i in ids]


def from_merged_ids(config: str, ids: Iterable[int]) -> list[int]:
    """Map merged-schema ids to ids of ``config``.

    Raises ``ValueError`` if a tag has no counterpart in ``config`` (for instance
    ``B-politician`` mapped into ``music``): such data belongs to another domain.
    """
    index = {tag: i for i, tag in enumerate(labels_for(config))}
    out = []
    for i in ids:
        tag = MERGED_LABELS[i]
        if tag not in index:
            raise ValueError(
                f"Merged label {tag!r} (id {i}) has no counterpart in config {config!r}; "
                f"its types are {', '.join(entity_types(config))}."
            )
        out.append(index[tag])
    return out


def map_tags_by_name(tags: Sequence[str], target_labels: Sequence[str]) -> list[str]:
    """Check that every tag of a source schema exists by name in ``target_labels`` (the head's list:
    :func:`head_labels_with_source` adds the source types a target lacks), so source data can be trained with the
    target's output layer. Returns ``tags`` unchanged; a one-line ``ValueError`` naming a few of each list else."""
    allowed = set(target_labels)
    missing = sorted({t for t in tags if t not in allowed})
    if missing:
        raise ValueError(f"Tags {_few(missing, 6)} have no counterpart in the target label list "
                         f"{_few(list(target_labels))}; map them with {FLAG} or train with the head's list "
                         "(head_labels_with_source).")
    return list(tags)


# ------------------------------------------------------------------ a user's tag list in id order
# A model trained on a user's data keeps the user's ids: a ClassLabel's names, else the list given by ``--label_list``
# or the folder's ``labels.json``, else O then the types in first-seen order (crossner_hf.data.columns). A copy of
# the data in string tags (adapt's ``OUT/data/<name>``) writes its ``labels.json`` beside it, so the order survives.

LABELS_FILE = "labels.json"
"""An optional file in a user's data folder (CoNLL, JSON Lines, CSV, Parquet): its tag list in id order."""

LABEL_LIST_EXAMPLE = '["O", "B-person", "I-person"]'
SHOWN = 48
"""Characters of a tag a message quotes: a 5 MB tag is named by its start and length, never pasted."""


def shown_tag(tag: str) -> str:
    """``repr(tag)``, cut to its start (with its length) when longer than :data:`SHOWN` characters."""
    return repr(tag) if len(tag) <= SHOWN else f"{tag[:SHOWN]!r}... ({len(tag):,} characters)"


def tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a tag (``None`` when it can): not ``O`` / ``B-type`` / ``I-type``, or a type holding a
    TAB or line break (a CoNLL file written from it could not be read back: its lines split there) or starting or
    ending with a space (the CoNLL reader strips it)."""
    if not isinstance(tag, str) or not (tag == "O" or (tag[:2] in ("B-", "I-") and len(tag) > 2)):
        return (f"not BIO: {shown_tag(tag) if isinstance(tag, str) else repr(tag)[:SHOWN]}; tags are O, B-type, "
                "I-type (convert IOBES or other schemes to BIO first)")
    kind = tag[2:]
    if any(c in kind for c in "\t\n\r"):
        return (f"the type of {shown_tag(tag)} holds a TAB or line break; rename it (a CoNLL file written from it "
                "could not be read back)")
    if kind != kind.strip():
        return f"the type of {shown_tag(tag)} starts or ends with a space; remove it"
    return None


def check_label_list(labels: Sequence[str], where: str, form: str = "a list of tags") -> list[str]:
    """``labels`` if it is a tag list in id order: strings, ``O`` first, each a tag (:func:`tag_problem`), each
    once; a one-line ``ValueError`` naming ``where`` else (``form``: what the place should hold)."""
    if not isinstance(labels, (list, tuple)) or not labels or not all(isinstance(t, str) for t in labels):
        raise ValueError(f"{where}: expected {form} with \"O\" first, e.g. {LABEL_LIST_EXAMPLE}.")
    if labels[0] != "O":
        raise ValueError(f"{where}: expected {form} with \"O\" first (id 0), e.g. {LABEL_LIST_EXAMPLE}; it starts "
                         f"with {shown_tag(labels[0])}.")
    for tag in labels:
        why = tag_problem(tag)
        if why is not None:
            raise ValueError(f"{where}: {why}")
    seen: set[str] = set()
    repeated = next((t for t in labels if t in seen or seen.add(t)), None)  # a set: 30,000 tags in one pass
    if repeated is not None:
        raise ValueError(f"{where}: {repeated!r} is listed twice; list each tag once.")
    return list(labels)


def read_label_file(path: str | Path) -> list[str]:
    """The tag list a JSON file holds (``labels.json``), checked by :func:`check_label_list`."""
    path = Path(path)
    try:
        labels = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        why = getattr(err, "msg", None) or getattr(err, "strerror", None) or type(err).__name__
        raise ValueError(f"{path}: not a readable JSON list of tags ({why}); write one with \"O\" first, e.g. "
                         f"{LABEL_LIST_EXAMPLE}.") from None
    return check_label_list(labels, str(path), "a JSON list of tags")


def parse_label_list(value: str | Sequence[str] | None) -> list[str] | None:
    """``--label_list``: tags separated by commas (``O,B-x,I-x``), a JSON list, or a JSON file holding one; a list
    as it is. ``None`` when not given."""
    if value is None or value == "" or value == []:
        return None
    if not isinstance(value, str):
        return check_label_list(list(value), "--label_list")
    text = value.strip()
    if text.startswith("["):
        try:
            return check_label_list(json.loads(text), "--label_list")
        except json.JSONDecodeError as err:
            raise ValueError(f"--label_list: not a JSON list ({err.msg}); give O,B-x,I-x or a JSON file.") from None
    if text.endswith(".json") or _is_file(text):
        return read_label_file(text)
    return check_label_list([t.strip() for t in text.split(",") if t.strip()], "--label_list")


def _is_file(text: str) -> bool:
    """Whether ``text`` names a file; a long comma-separated tag list is no path (the system's "file name too long"
    is an answer here, not an error)."""
    try:
        return Path(text).is_file()
    except OSError:
        return False


# ------------------------------------------------------------------ the BIO label scheme


def continues(previous: str | None, tag: str) -> bool:
    """Whether ``I-x`` after ``previous`` continues an entity: IOB2 allows it after ``B-x``/``I-x`` only."""
    return tag.startswith("I-") and previous is not None and previous != "O" and tag_type(previous) == tag_type(tag)


def orphan_message(tag: str, previous: str, token: str | None = None) -> str:
    """The one message for an orphan ``I-`` tag, whatever the source (a CoNLL file, a dataset, a DatasetDict)."""
    etype = tag_type(tag)
    shown = f" (token {token!r})" if token is not None else ""
    return (f"tag {tag!r}{shown} does not continue an entity of type {etype!r} (previous tag {previous!r}); use "
            f"'B-{etype}', or read it as 'B-{etype}' as conlleval does with strict=False (--strict false).")


def orphan_rule(tags: Sequence[str], *, strict: bool, where: str, tokens: Sequence[str] | None = None
                ) -> tuple[list[str], int]:
    """The one rule for orphan ``I-x`` tags (after ``O``, at the start, or after another type): ``strict`` raises a
    ``ValueError`` naming ``where`` and the word (1-based); otherwise they become ``B-x``. Returns the tags and the count
    repaired (the caller says how many, once)."""
    out, repaired = [], 0
    for i, tag in enumerate(tags):
        if tag.startswith("I-"):
            previous = out[-1] if out else "O"
            if not continues(previous, tag):
                if strict:
                    raise ValueError(f"{where}, word {i + 1}: " + orphan_message(tag, previous,
                                                                             tokens[i] if tokens else None))
                tag = "B-" + tag_type(tag)
                repaired += 1
        out.append(tag)
    return out, repaired


# ------------------------------------------------ the source's types mapped onto the target's
# ``--source_label_map person=x_person,...``: joint and pretrain-finetune train CoNLL-2003 (the source) with the
# target's output layer; a source type the target lacks becomes an extra row, learnt from the source alone and
# masked at prediction, so a user whose types are CoNLL-2003's under other names (``x_person``, ``PER``) maps them.
# A map is never guessed silently: :func:`propose_label_map` proposes, :func:`check_label_map` logs the flag.

FLAG = "--source_label_map"

# The names a person would map CoNLL-2003's types to: its files' short names (PER, ORG, LOC, MISC), the American
# spelling, plurals and the common words for each (misc -> Other). Compared after _normal (case, separators).
ALIASES: dict[str, tuple[str, ...]] = {
    "person": ("per", "people", "persons", "human", "humans"),
    "organisation": ("org", "orgs", "organization", "organizations", "organisations"),
    "location": ("loc", "locs", "locations", "place", "places"),
    "misc": ("miscellaneous", "other", "others"),
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


def _normal(name: str) -> str:
    """A type name compared as a person reads it: lower case, letters and digits only (``Org.`` -> ``org``)."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def _prefixed(target_type: str, name: str) -> bool:
    """``target_type`` is ``name`` after a prefix ending in a separator (``x_person``, ``CONLL-Person``)."""
    return re.fullmatch(rf"(?:.*[^0-9a-z])?{re.escape(name)}", target_type.lower()) is not None


def propose_label_map(source_types: Sequence[str], target_types: Sequence[str]) -> dict[str, str]:
    """Source types the target has under another name, as a person would match them: the same name up to case and
    separators (``Person``, ``MISC``), then a name a person uses for it (``misc`` -> ``Other`` / ``Miscellaneous``,
    ``organisation`` -> ``Organization`` / ``Org``, ``person`` -> ``Per`` / ``People`` / ``Persons``, ``location``
    -> ``Loc`` / ``Place``: :data:`ALIASES`), then the name after a prefix (``x_person``). The first of these that
    finds exactly one target type gives it; a type the target has as it is, or one several target types could
    stand for, is left out. A proposal: ``train`` logs it, ``adapt`` applies it unless told otherwise.

    >>> propose_label_map(["person", "organisation", "location", "misc"], ["Person", "Organization", "Place", "Other"])
    {'person': 'Person', 'organisation': 'Organization', 'location': 'Place', 'misc': 'Other'}
    """
    present = set(target_types)
    normal = {t: _normal(t) for t in target_types}
    proposal: dict[str, str] = {}
    for source in source_types:
        if source in present:
            continue
        own, aliases = _normal(source), {_normal(a) for a in ALIASES.get(source, ())}
        tiers = ([t for t in target_types if normal[t] == own],
                 [t for t in target_types if normal[t] in aliases],
                 [t for t in target_types if any(_prefixed(t, n) for n in (source.lower(), *ALIASES.get(source, ())))])
        matches = next((tier for tier in tiers if tier), [])
        if len(matches) == 1 and matches[0] not in proposal.values():
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
                             f"{_few(source_types)}); fix the left side{_did_you_mean(source, source_types)}.")
        if target not in target_types:
            guess = propose_label_map([source], target_types).get(source) if source in source_types else None
            hint = f" (did you mean {guess!r}?)" if guess else _did_you_mean(target, target_types)
            raise ValueError(f"{FLAG} {source}={target}: {target_name} has no type {target!r} (its types: "
                             f"{_few(target_types)}); fix the right side{hint}.")
    logger.info("%s: %s's %s trained as %s's %s.", FLAG, source_name, ", ".join(label_map), target_name,
                ", ".join(label_map.values()))


def _few(types: Sequence[str], limit: int = 20) -> str:
    """Types in a message: the first ``limit``, then how many more (a one-line error for 15,000 types too)."""
    return ", ".join(types[:limit]) + (f", ... {len(types) - limit} more" if len(types) > limit else "")


def _did_you_mean(name: str, types: Sequence[str]) -> str:
    """`` (did you mean 'Person'?)`` for a misspelt type: the closest name up to case, if one is close."""
    import difflib

    by_normal = {_normal(t): t for t in types}
    close = difflib.get_close_matches(_normal(name), list(by_normal), n=1, cutoff=0.75)
    return f" (did you mean {by_normal[close[0]]!r}?)" if close else ""


NO_MAP = "none"
"""``--source_label_map none``: no type mapped, not even the proposed ones (``adapt``)."""


def resolve_label_map(value: str | Mapping[str, str] | None, target_labels: Sequence[str], target_name: str,
                      source_labels: Sequence[str] | None = None, source_name: str = "CoNLL-2003"
                      ) -> dict[str, str] | None:
    """The map a search with a source uses, checked once before anything runs: ``value`` as given (a one-line
    ``ValueError`` for a malformed map or a type either side lacks), :data:`NO_MAP` for none, ``None`` for the
    proposed one (:func:`propose_label_map`; ``None`` when nothing matches)."""
    source_labels = list(source_labels or labels_for(SOURCE_DOMAIN))
    if isinstance(value, str) and value.strip().lower() == NO_MAP:
        return None
    if value is None:
        return propose_label_map(types_of(source_labels), types_of(target_labels)) or None
    parsed = parse_label_map(value)
    if parsed:
        check_label_map(parsed, source_labels, target_labels, source_name, target_name)
    return parsed


def describe_label_map(label_map: Mapping[str, str] | None, target_labels: Sequence[str],
                       source_labels: Sequence[str] | None = None, source_name: str = "CoNLL-2003") -> str:
    """One line saying what becomes of each of the source's types in a schedule that trains on it (pretrain-finetune,
    joint): the target's own by name, mapped (and the flag that does it), or added to the head after the target's
    tags, learnt from the source alone and masked at prediction."""
    source_types = types_of(list(source_labels or labels_for(SOURCE_DOMAIN)))
    present = set(types_of(target_labels))
    label_map = dict(label_map or {})
    same = [t for t in source_types if t in present and t not in label_map]
    added = [t for t in source_types if t not in present and t not in label_map]
    parts = []
    if same:
        parts.append(f"{', '.join(same)} yours by name")
    if label_map:
        parts.append(f"{format_label_map(label_map)} mapped ({FLAG} {format_label_map(label_map)})")
    if added:
        parts.append(f"{', '.join(added)} added after your tags (learnt from {source_name} alone, never predicted)")
    return f"{source_name}'s types in pretrain-finetune and joint: {'; '.join(parts)}"


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
