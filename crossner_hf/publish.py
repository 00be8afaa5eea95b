"""Writing datasets as a Hub-ready folder (Parquet + dataset card) and pushing it.

``write_hub_dataset_folder`` lays out several configs the way ``datasets`` reads a Hub
repository without a loading script::

    OUT/README.md                                    card: YAML ``configs`` + ``dataset_info``
    OUT/data/<config>/<split>-00000-of-00001.parquet

so ``load_dataset(OUT, "<config>")`` works from the folder (offline) and, after
``crossner_hf.hub.push_to_hub``, from the Hub. The YAML is produced by ``datasets``' own
``MetadataConfigs`` and ``DatasetInfosDict`` writers, the ones ``push_to_hub`` uses.

Example:
    >>> from datasets import Dataset
    >>> import tempfile
    >>> out = write_hub_dataset_folder({"tiny": Dataset.from_dict({"text": ["a", "b"]})},
    ...                                tempfile.mkdtemp(), {"license": "mit"}, "# Tiny\\n")
    >>> sorted(p.name for p in (out / "data" / "tiny").iterdir())
    ['train-00000-of-00001.parquet']
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from datasets import Dataset, DatasetDict, DatasetInfo, SplitDict, SplitInfo
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from .outputs import staged_outputs

logger = logging.getLogger(__name__)

DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SPLIT_RE = re.compile(r"^\w+$")


def _as_splits(name: str, data: Dataset | DatasetDict) -> dict[str, Dataset]:
    if isinstance(data, Dataset):
        return {"train": data}
    if isinstance(data, DatasetDict) and len(data):
        return dict(data)
    raise ValueError(
        f"write_hub_dataset_folder: config {name!r} must be a Dataset or a non-empty "
        f"DatasetDict, got {type(data).__name__}."
    )


def write_hub_dataset_folder(
    configs: Mapping[str, Dataset | DatasetDict],
    output_dir: str | Path,
    card_yaml_extra: Mapping[str, Any] | None = None,
    card_body: str = "",
    *,
    default_config: str | None = None,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    overwrite: bool = True,
) -> Path:
    """Write each config's splits as Parquet shards and a ``README.md`` card; returns the folder.

    Args:
        configs: ``config name -> Dataset`` (one ``train`` split) or ``DatasetDict``.
        output_dir: the folder; its ``data/`` and ``README.md`` are replaced if
            ``overwrite`` (other files are left alone).
        card_yaml_extra: more YAML metadata (``license``, ``language``,
            ``task_categories``, ``pretty_name``, ...).
        card_body: Markdown after the YAML front matter.
        default_config: the config ``load_dataset(OUT)`` picks without a name.
        max_shard_bytes: Arrow size above which a split is cut into several Parquet files.
    """
    if not configs:
        raise ValueError("write_hub_dataset_folder got no configs: pass {name: Dataset}.")
    if default_config is not None and default_config not in configs:
        raise ValueError(
            f"write_hub_dataset_folder: default_config {default_config!r} is not one of {list(configs)}."
        )
    out = Path(output_dir)
    if (out / "data").exists() and not overwrite:
        raise ValueError(f"{out / 'data'} exists; pass overwrite=True or choose another output_dir.")
    # data/ and the card are written aside and replace the old ones only when complete
    with staged_outputs(out) as stage:
        _write_configs(configs, stage, card_yaml_extra, card_body, default_config, max_shard_bytes)
    logger.info("Wrote %d config(s) to %s.", len(configs), out)
    return out


def _write_configs(configs: Mapping[str, Dataset | DatasetDict], out: Path, card_yaml_extra: Mapping[str, Any] | None,
                   card_body: str, default_config: str | None, max_shard_bytes: int) -> None:
    data_dir = out / "data"
    data_dir.mkdir(parents=True)

    metadata: dict[str, dict[str, Any]] = {}
    infos = DatasetInfosDict()
    for name, data in configs.items():
        if not _NAME_RE.match(name):
            raise ValueError(
                f"Config name {name!r} must start with a letter or digit and use only letters, "
                "digits, '-', '_' and '.'."
            )
        splits = _as_splits(name, data)
        features = next(iter(splits.values())).features
        info = DatasetInfo(features=features, splits=SplitDict(), download_size=0, dataset_size=0)
        data_files = []
        for split, dataset in splits.items():
            if not _SPLIT_RE.match(split):
                raise ValueError(f"Split name {split!r} of config {name!r} must be letters, digits or '_'.")
            if dataset.features != features:
                raise ValueError(
                    f"Config {name!r}: split {split!r} has features {dataset.features}, unlike the "
                    f"first split's {features}; one config has one schema."
                )
            if dataset._indices is not None:  # no public accessor; pinned by test_corpora (a filtered split)
                # A filtered/selected view: its Arrow table still holds every row, so sizes
                # and shards must come from a flat copy.
                fmt = dataset.format
                dataset = dataset.with_format("arrow").flatten_indices().with_format(
                    fmt["type"], columns=fmt["columns"], output_all_columns=fmt["output_all_columns"],
                    **fmt["format_kwargs"],
                )
            written = _write_split(dataset, data_dir / name, split, max_shard_bytes)
            num_bytes = dataset.data.nbytes
            info.splits.add(SplitInfo(name=split, num_bytes=num_bytes, num_examples=len(dataset)))
            info.download_size += written
            info.dataset_size += num_bytes
            data_files.append({"split": split, "path": f"data/{name}/{split}-*"})
        info.size_in_bytes = info.download_size + info.dataset_size
        infos[name] = info
        metadata[name] = {"data_files": data_files}
        if name == default_config:
            metadata[name]["default"] = True

    card_data = DatasetCardData(**dict(card_yaml_extra or {}))
    MetadataConfigs(metadata).to_dataset_card_data(card_data)
    infos.to_dataset_card_data(card_data)
    card = DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{card_body.lstrip()}")
    card.save(out / "README.md")


def _write_split(dataset: Dataset, folder: Path, split: str, max_shard_bytes: int) -> int:
    """Parquet shards ``<split>-0000i-of-0000n.parquet``; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    num_shards = max(1, math.ceil(dataset.data.nbytes / max_shard_bytes)) if len(dataset) else 1
    num_shards = min(num_shards, max(1, len(dataset)))
    written = 0
    for index in range(num_shards):
        shard = dataset.shard(num_shards, index, contiguous=True) if num_shards > 1 else dataset
        path = folder / f"{split}-{index:05d}-of-{num_shards:05d}.parquet"
        shard.to_parquet(str(path))
        written += path.stat().st_size
    return written


def hub_repo_id(args: Any) -> str | None:
    """The repo a training run pushes to: ``--hub_model_id``, else the output folder's name."""
    if not getattr(args, "push_to_hub", False):
        return None
    return args.hub_model_id or Path(args.output_dir).resolve().name


def push_run_output(args: Any, folder: str | Path) -> str | None:
    """Push a finished run's folder when ``--push_to_hub`` is set (``TrainingArguments``' hub flags).

    The best model, tokenizer, ``results.json`` and card go up; the per-seed models
    (``seed-*/``) and checkpoints stay local.
    """
    repo_id = hub_repo_id(args)
    if repo_id is None:
        return None
    from .hub import push_to_hub

    return push_to_hub(folder, repo_id, repo_type="model", private=bool(getattr(args, "hub_private_repo", False)),
                       token=getattr(args, "hub_token", None))  # hub.RUN_IGNORE_PATTERNS, as `crossner-hf push`
