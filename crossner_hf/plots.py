"""Every PNG the project draws (matplotlib, headless Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


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
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)  # figures are not freed otherwise; loops over many plots would leak
    return path
