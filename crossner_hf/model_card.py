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


def write_ner_model_card(folder: str | Path, results: Mapping[str, Any]) -> Path:
    """Write ``README.md`` for a fine-tuned NER model from its ``results.json`` content."""
    from .labels import labels_for
    from .metrics import format_per_type_table

    config = results["config"]
    best = next(r for r in results["per_seed"] if r["seed"] == results["best_seed"])
    settings = {
        k: config.get(k) for k in (
            "schedule", "learning_rate", "head_learning_rate", "per_device_train_batch_size",
            "num_train_epochs", "warmup_steps", "weight_decay", "lr_scheduler_type",
            "early_stopping_patience", "source_epochs", "oversample_factor", "few_shot", "max_length",
        )
    }
    values = {
        "title": f"CrossNER {results['domain']} NER ({results['schedule']})",
        "domain": results["domain"],
        "schedule": results["schedule"],
        "base_model": results["model_name_or_path"],
        "seeds": ", ".join(str(s) for s in results["seeds"]),
        "test_f1": f"{100 * results['test_overall_f1_mean']:.2f} ± {100 * results['test_overall_f1_std']:.2f}",
        "dev_f1": f"{100 * results['dev_overall_f1_mean']:.2f} ± {100 * results['dev_overall_f1_std']:.2f}",
        "best_seed": results["best_seed"],
        "per_type_table": "```\n" + format_per_type_table(best["test"]) + "\n```",
        "settings_rows": "\n".join(f"| {k} | {v} |" for k, v in settings.items()),
        "n_labels": len(labels_for(results["domain"])),
        "labels": ", ".join(f"`{t}`" for t in labels_for(results["domain"])),
    }
    path = Path(folder) / "README.md"
    path.write_text(render("ner_model", values), encoding="utf-8")
    return path
