"""Every PNG the project draws (matplotlib, headless Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from crossner_hf.extras import require


def _pyplot():
    matplotlib = require("matplotlib", "plots")

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def type_colour(name: str) -> tuple[float, float, float]:
    """One colour per entity type, the same in every plot and for every model (keyed by the label).

    CrossNER's 39 types take fixed places in matplotlib's tab20 + tab20b (dark shades first, so
    the types of one domain rarely share a hue); any other label (a NER-BERT category) is placed
    by a stable hash of its name.
    """
    import zlib

    from crossner_hf.data.labels import ALL_TYPES

    plt = _pyplot()
    tab20, tab20b = plt.get_cmap("tab20").colors, plt.get_cmap("tab20b").colors
    palette = list(tab20[0::2]) + list(tab20b[0::2]) + list(tab20[1::2]) + list(tab20b[1::2])
    index = ALL_TYPES.index(name) if name in ALL_TYPES else zlib.crc32(name.encode("utf-8"))
    return tuple(palette[index % len(palette)])


def overlap_colour_range(matrix: Mapping[str, Mapping[str, float]]) -> tuple[float, float]:
    """``(vmin, vmax)`` of the off-diagonal cells: the diagonal (always 100) would spend the scale."""
    off = [v for a, row in matrix.items() for b, v in row.items() if a != b]
    if not off:
        return 0.0, 100.0
    lo, hi = min(off), max(off)
    return (lo, hi) if hi > lo else (lo - 1.0, hi + 1.0)


def plot_vocabulary_overlap(
    matrix: Mapping[str, Mapping[str, float]], path: str | Path, *, title: str | None = None,
    top_k: int = 5000,
) -> Path:
    """Heatmap of pairwise vocabulary overlap (IoU %), as the paper's Figure 1.

    Colours span the off-diagonal values only; diagonal cells (a domain with itself, 100)
    are drawn grey with their number, so the differences between domains stay visible.
    """
    import numpy as np

    plt = _pyplot()
    names = list(matrix)
    values = np.array([[matrix[a][b] for b in names] for a in names], dtype=float)
    vmin, vmax = overlap_colour_range(matrix)
    shown = np.ma.masked_array(values, mask=np.eye(len(names), dtype=bool))
    cmap = plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2.5, 1.0 * len(names) + 1.8))
    image = ax.imshow(shown, cmap=cmap, vmin=vmin, vmax=vmax)
    ax.set_xticks(range(len(names)), labels=names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), labels=names)
    middle = (vmin + vmax) / 2
    for i in range(len(names)):
        for j in range(len(names)):
            v = values[i, j]
            dark = i != j and v > middle
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if dark else "black")
    k = f"{top_k // 1000}K" if top_k % 1000 == 0 else str(top_k)
    fig.colorbar(image, ax=ax, label=f"IoU %, top-{k} words, stopwords excluded")
    ax.set_title(title or f"Vocabulary overlap (IoU %, top-{k} words, stopwords excluded)", fontsize=10)
    return _save(plt, fig, path)


def _save(plt, fig, path: str | Path) -> Path:
    from crossner_hf.outputs import atomic_output

    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_output(path) as tmp:  # never a half-written PNG under the final name
            fig.savefig(tmp, dpi=120, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)  # figures are not freed otherwise; loops over many plots would leak
    return path


def plot_entity_scatter(
    points, categories, path: str | Path, *, scores: Mapping | None = None, title: str | None = None,
) -> Path:
    """2-D scatter of entity representations coloured by type, with a legend (the NER-BERT figures).

    One ``scatter`` call per type, most frequent type first (drawn first, so rare types stay
    visible on top); legend entries give each type's count and, with ``scores`` (from
    :func:`crossner_hf.evaluation.entity_analysis.silhouette_by_category`), its silhouette.
    """
    import numpy as np

    plt = _pyplot()
    points = np.asarray(points, dtype=float)
    labels = np.asarray(list(categories))
    if points.ndim != 2 or points.shape[1] != 2 or len(points) != len(labels):
        raise ValueError(
            f"plot_entity_scatter: expected n x 2 points for {len(labels)} categories, got {points.shape}."
        )
    names, counts = np.unique(labels, return_counts=True)
    order = [names[i] for i in np.lexsort((names, -counts))]
    per_type = (scores or {}).get("per_category") or {}
    fig, ax = plt.subplots(figsize=(9.5, 7))
    for name in order:
        mask = labels == name
        label = f"{name} ({int(mask.sum())}"
        label += f", s={per_type[name]:+.2f})" if per_type.get(name) is not None else ")"
        ax.scatter(points[mask, 0], points[mask, 1], s=9, alpha=0.75, color=type_colour(name), label=label,
                   linewidths=0)
    ax.set_xticks([])
    ax.set_yticks([])  # t-SNE axes have no units
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, markerscale=2, frameon=False,
              title="gold type (n, silhouette)" if per_type else "gold type (n)", title_fontsize=8)
    heading = title or f"t-SNE of {len(labels)} gold entity representations"
    overall = (scores or {}).get("overall")
    if overall is not None:
        heading += f"\nsilhouette ({scores.get('metric', 'cosine')}, full dimension): {overall:+.3f}"
    ax.set_title(heading, fontsize=10)
    return _save(plt, fig, path)


def plot_entity_confusion(
    rows, columns=None, counts=None, path: str | Path | None = None, *, title: str | None = None,
) -> Path:
    """Heatmap of an entity-level confusion table: gold types down, predicted across.

    Takes ``(rows, columns, counts, path)``, or what :func:`crossner_hf.evaluation.entity_analysis.confusion_table`
    returns, whole or as its ``to_dict()``: ``plot_entity_confusion(table, path)``.

    Colour is the row percentage (each gold type's entities sum to 100%), so rare and
    frequent types read alike; every non-empty cell is annotated with its count and row
    percentage. The ``no entity`` x ``no entity`` cell does not exist and is drawn grey.
    """
    import numpy as np

    if hasattr(rows, "rows") and hasattr(rows, "counts"):  # a ConfusionTable given whole: plot_entity_confusion(t, path)
        table, path = rows, columns if path is None else path
        rows, columns, counts = table.rows, table.columns, table.counts
    if isinstance(rows, Mapping) and "counts" in rows:  # ConfusionTable.to_dict() given whole
        table, path = rows, columns if path is None else path
        rows, columns, counts = table["rows"], table["columns"], table["counts"]
    if isinstance(counts, Mapping):  # to_dict()'s nested counts: gold -> predicted -> n
        counts = [[counts.get(r, {}).get(c, 0) for c in columns] for r in rows]
    if path is None:
        raise ValueError("plot_entity_confusion: pass the PNG path (plot_entity_confusion(table, path) or "
                         "plot_entity_confusion(rows, columns, counts, path)).")
    plt = _pyplot()
    values = np.asarray(counts, dtype=float).reshape(len(rows), len(columns))
    totals = values.sum(axis=1, keepdims=True)
    pct = np.divide(100.0 * values, totals, out=np.zeros_like(values), where=totals > 0)
    undefined = np.array([[r == c == "no entity" for c in columns] for r in rows], dtype=bool)
    cmap = plt.get_cmap("Blues").with_extremes(bad="#d9d9d9")
    fig, ax = plt.subplots(figsize=(0.62 * len(columns) + 3.2, 0.45 * len(rows) + 2.4))
    image = ax.imshow(np.ma.masked_array(pct, mask=undefined), cmap=cmap, vmin=0, vmax=100, aspect="auto")
    ax.set_xticks(range(len(columns)), labels=columns, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), labels=rows, fontsize=8)
    ax.set_xlabel("predicted type")
    ax.set_ylabel("gold type")
    for i in range(len(rows)):
        for j in range(len(columns)):
            if values[i, j]:
                ax.text(j, i, f"{int(values[i, j])}\n{pct[i, j]:.0f}%", ha="center", va="center", fontsize=6,
                        color="white" if pct[i, j] > 55 else "black")
    fig.colorbar(image, ax=ax, label="% of the gold type's entities (row)")
    ax.set_title(title or "Entity-level confusion (gold x predicted)", fontsize=10)
    return _save(plt, fig, path)


def plot_category_counts(
    before: Mapping[str, int], after: Mapping[str, int], path: str | Path, *, top: int = 60
) -> Path:
    """Entities per category before and after balancing, as the NER-BERT paper's Figure 8.

    Bars sorted by the count before balancing, on a log scale (counts span orders of
    magnitude). With more than ``top`` categories, ``top`` of them evenly spread over the
    ranks are drawn, the largest and the rarest included, so both ends of the balancing
    show: rare categories go up, frequent ones down; the title says so.
    """
    import numpy as np

    plt = _pyplot()
    ranked = [c for c, _ in sorted(before.items(), key=lambda kv: (-kv[1], kv[0]))]
    picks = sorted({int(round(i)) for i in np.linspace(0, len(ranked) - 1, top)}) if len(ranked) > top else range(len(ranked))
    names = [ranked[i] for i in picks]
    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.22 * len(names) + 2), 4.2))
    ax.bar(x - 0.2, [before.get(n, 0) for n in names], width=0.4, label="before balancing", color="#4c72b0")
    ax.bar(x + 0.2, [after.get(n, 0) for n in names], width=0.4, label="after balancing", color="#dd8452")
    ax.set_yscale("log")
    ax.set_xticks(x, labels=names, rotation=90, fontsize=7)
    ax.set_ylabel("entities")
    spread = f" ({len(names)} of {len(ranked)}, spread over the ranks)" if len(ranked) > len(names) else ""
    ax.set_title(f"Entities per category, largest to rarest{spread}", fontsize=10)
    ax.legend()
    return _save(plt, fig, path)


def curve_gains(curves: Mapping[str, Mapping[float, Sequence[float]]],
                pairs: Mapping[str, tuple[str, str]]) -> dict[str, dict[float, float]]:
    """``{gain: {x: mean(better) - mean(baseline)}}`` for each ``gain: (better, baseline)`` pair of curves, at the
    x both have (NER-BERT's improvement over BERT, NER-BERT Figure 2's right axis, 003:128)."""
    import statistics

    gains = {}
    for name, (better, baseline) in pairs.items():
        a, b = curves.get(better, {}), curves.get(baseline, {})
        xs = sorted(set(a) & set(b))
        if xs:
            gains[name] = {x: statistics.fmean(a[x]) - statistics.fmean(b[x]) for x in xs}
    return gains


def plot_curves(curves: Mapping[str, Mapping[float, Sequence[float]]], path: str | Path, *, xlabel: str,
                ylabel: str = "test F1 (%)", title: str | None = None,
                gains: Mapping[str, tuple[str, str]] | None = None, gain_label: str = "gain (F1 points)") -> Path:
    """Line per curve through the mean at each x, with a band of ± one standard deviation over seeds
    (the CrossNER few-shot and corpus-size figures); an x with one value has no band. ``gains``
    (``{name: (better, baseline)}``): each pair's difference of means, dashed, on a second y axis at the right
    (NER-BERT Figure 2 draws NER-BERT's gain over BERT so, 003:128)."""
    import statistics

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    differences = curve_gains(curves, gains or {})
    if differences:
        right = ax.twinx()
        for name, points in differences.items():
            xs = sorted(points)
            right.plot(xs, [points[x] for x in xs], linestyle="--", marker="^", color=type_colour(name), label=name)
        right.axhline(0.0, color="grey", linewidth=0.6)
        right.set_ylabel(gain_label)
        right.legend(fontsize=7, loc="lower right")
    for name, points in curves.items():
        xs = sorted(points)
        means = [statistics.fmean(points[x]) for x in xs]
        stds = [statistics.stdev(points[x]) if len(points[x]) > 1 else 0.0 for x in xs]
        colour = type_colour(name)
        ax.plot(xs, means, marker="o", color=colour, label=f"{name} ({max(len(points[x]) for x in xs)} seeds)")
        ax.fill_between(xs, [m - s for m, s in zip(means, stds)], [m + s for m, s in zip(means, stds)],
                        color=colour, alpha=0.2, linewidth=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return _save(plt, fig, path)


def plot_image_panel(images: Mapping[str, str | Path], path: str | Path, *, title: str | None = None,
                     columns: int = 2) -> Path:
    """Finished PNGs side by side, each under its caption (the NER-BERT t-SNE panel of four encoders)."""
    import math

    plt = _pyplot()
    rows = math.ceil(len(images) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6.5 * columns, 5.5 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, (caption, image) in zip(axes.flat, images.items()):
        ax.imshow(plt.imread(str(image)))
        ax.set_title(caption, fontsize=11)
    if title:
        fig.suptitle(title, fontsize=12)
    return _save(plt, fig, path)
