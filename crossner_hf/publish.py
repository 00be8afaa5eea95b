"""Hub-ready dataset folders (Parquet + a dataset card with ``configs:``) and pushing them.

``datasets`` no longer runs loading scripts, so a dataset is published as data files plus
a ``README.md`` whose YAML front matter lists the configs, their files and their features.
``load_dataset(folder_or_repo_id, config)`` then reads it, ClassLabel names included (they
are in the YAML ``dataset_info`` and in the Parquet schema metadata).

Example:
    >>> from datasets import Dataset, DatasetDict
    >>> import tempfile
    >>> folder = write_hub_dataset_folder(
    ...     {"demo": DatasetDict({"train": Dataset.from_dict({"text": ["a", "b"]})})},
    ...     tempfile.mkdtemp(), card_body="# Demo\\n")
    >>> from datasets import load_dataset
    >>> load_dataset(str(folder), "demo")["train"]["text"]
    ['a', 'b']
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

logger = logging.getLogger(__name__)


def _as_dict(dataset) -> dict[str, Any]:
    from datasets import Dataset, DatasetDict

    if isinstance(dataset, Dataset):
        return {"train": dataset}
    if isinstance(dataset, DatasetDict):
        return dict(dataset)
    raise TypeError(f"Expected a Dataset or DatasetDict, got {type(dataset).__name__}.")


def card_front_matter(configs: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> str:
    """The YAML front matter (without ``---`` fences) describing ``configs``.

    ``configs`` maps a config name to a ``Dataset`` or ``DatasetDict``; ``extra`` adds
    card metadata such as ``license`` or ``task_categories``.
    """
    meta: dict[str, Any] = dict(extra or {})
    meta["configs"] = []
    meta["dataset_info"] = []
    for i, (name, dataset) in enumerate(configs.items()):
        splits = _as_dict(dataset)
        entry: dict[str, Any] = {
            "config_name": name,
            "data_files": [{"split": s, "path": f"{name}/{s}-*.parquet"} for s in splits],
        }
        if i == 0:
            entry["default"] = True
        meta["configs"].append(entry)
        first = next(iter(splits.values()))
        meta["dataset_info"].append(
            {
                "config_name": name,
                # the same YAML layout that `Dataset.push_to_hub` writes
                "features": first.features._to_yaml_list(),
                "splits": [
                    {"name": s, "num_bytes": int(d.data.nbytes), "num_examples": len(d)}
                    for s, d in splits.items()
                ],
            }
        )
    return yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)


def write_hub_dataset_folder(
    configs: Mapping[str, Any],
    output_dir: str | Path,
    *,
    card_body: str,
    card_metadata: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``<output_dir>/<config>/<split>-00000-of-00001.parquet`` and ``README.md``.

    Existing Parquet files of the same configs are replaced, so a rebuild never mixes
    old and new shards. Returns the folder.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, dataset in configs.items():
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob("*.parquet"):
            stale.unlink()
        for split, data in _as_dict(dataset).items():
            data.to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
    card = f"---\n{card_front_matter(configs, card_metadata)}---\n\n{card_body}"
    (out / "README.md").write_text(card, encoding="utf-8")
    logger.info("Wrote %d config(s) to %s", len(configs), out)
    return out


def push_folder(
    folder: str | Path,
    repo_id: str,
    *,
    repo_type: str = "dataset",
    private: bool = False,
    token: str | None = None,
    commit_message: str = "Upload with crossner_hf",
) -> str:
    """Create ``repo_id`` if needed and upload ``folder`` to it; returns the commit URL.

    Uses ``$HF_ENDPOINT`` and the cached token like every ``huggingface_hub`` call.
    """
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, repo_type=repo_type, private=private, exist_ok=True)
    info = api.upload_folder(
        folder_path=str(folder), repo_id=repo_id, repo_type=repo_type,
        commit_message=commit_message,
    )
    logger.info("Pushed %s to %s", folder, repo_id)
    return str(getattr(info, "commit_url", info))
