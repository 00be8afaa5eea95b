"""Every PNG the project draws (matplotlib, headless Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI
    import matplotlib.pyplot as plt

    return plt


def plot_vocabulary_overlap(
    matrix: Mapping[str, Mapping[str, float]], path: str | Path, *, title: str | None = None
) -> Path:
    """Heatmap of pairwise vocabulary overlap (%), as the paper's Figure 1."""
    plt = _pyplot()
    names = list(matrix)
    values = [[matrix[a][b] for b in names] for a in names]
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2, 1.0 * len(names) + 1.5))
    image = ax.imshow(values, cmap="Blues", vmin=0, vmax=100)
    ax.set_xticks(range(len(names)), labels=names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), labels=names)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if v > 60 else "black")
    fig.colorbar(image, ax=ax, label="overlap of top-5K vocabularies (%)")
    ax.set_title(title or "Vocabulary overlap between domains")
    return _save(plt, fig, path)


def _save(plt, fig, path: str | Path) -> Path:
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)  # figures are not freed otherwise; loops over many plots would leak
    return path
