"""Dataset and model cards rendered from the templates in ``model_cards/``.

The templates are plain Markdown with ``$name`` placeholders (``string.Template``); they
ship inside the wheel as the package ``crossner_hf.model_cards`` so a non-editable install
finds them too.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from .labels import CONFIGS, labels_for


def load_template(name: str) -> string.Template:
    """The template ``model_cards/<name>.md``."""
    try:
        text = resources.files("crossner_hf.model_cards").joinpath(f"{name}.md").read_text("utf-8")
    except ModuleNotFoundError:  # running from a source checkout that is not installed
        text = (Path(__file__).resolve().parents[1] / "model_cards" / f"{name}.md").read_text("utf-8")
    return string.Template(text)


def render_crossner_dataset_card(
    counts: Mapping[str, Mapping[str, int]], *, commit: str, repo: str = "crossner"
) -> str:
    """The body of the CrossNER dataset card; ``counts[config][split]`` = sentences."""
    count_rows = "\n".join(
        f"| {c} | {counts[c]['train']} | {counts[c]['validation']} | {counts[c]['test']} |"
        for c in CONFIGS if c in counts
    )
    label_rows = "\n".join(
        f"- **{c}** ({len(labels_for(c))} tags): " + ", ".join(f"`{t}`" for t in labels_for(c))
        for c in CONFIGS if c in counts
    )
    return load_template("crossner_dataset").substitute(
        commit=commit, repo=repo, count_rows=count_rows, label_rows=label_rows
    )


def render(name: str, values: Mapping[str, Any]) -> str:
    """Fill template ``name`` with ``values`` (every placeholder must be given)."""
    return load_template(name).substitute({k: str(v) for k, v in values.items()})
