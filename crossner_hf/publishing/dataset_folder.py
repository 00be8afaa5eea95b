"""Writing datasets as a Hub-ready folder (Parquet + dataset card) and pushing it.

``write_hub_dataset_folder`` lays out several configs the way ``datasets`` reads a Hub
repository without a loading script::

    OUT/README.md                                    card: YAML ``configs`` + ``dataset_info``
    OUT/data/<config>/<split>-00000-of-00001.parquet

so ``load_dataset(OUT, "<config>")`` works from the folder (offline) and, after
``crossner_hf.publishing.hub.push_to_hub``, from the Hub. The YAML is produced by ``datasets``' own
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import Dataset, DatasetDict, DatasetInfo, Features, SplitDict, SplitInfo
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from huggingface_hub import DatasetCard, DatasetCardData

from crossner_hf.outputs import staged_outputs

logger = logging.getLogger(__name__)

DEFAULT_MAX_SHARD_BYTES = 500 * 1024 * 1024
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_SPLIT_RE = re.compile(r"^\w+$")
_BATCH_ROWS = 10_000


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
    overwrite: bool = False,
) -> Path:
    """Write each config's splits as Parquet shards and a ``README.md`` card; returns the folder.

    Args:
        configs: ``config name -> Dataset`` (one ``train`` split) or ``DatasetDict``.
        output_dir: the folder; its ``data/`` and ``README.md`` are replaced (other files are left alone).
            A non-empty folder that crossner_hf did not write is refused unless ``overwrite``.
        card_yaml_extra: more YAML metadata (``license``, ``language``,
            ``task_categories``, ``pretty_name``, ...).
        card_body: Markdown after the YAML front matter.
        default_config: the config ``load_dataset(OUT)`` picks without a name.
        max_shard_bytes: Arrow size above which a split is cut into several Parquet files.
    """
    if not configs:
        raise ValueError("write_hub_dataset_folder got no configs: pass {name: Dataset}.")
    streamed: dict[str, ConfigBatches] = {}
    for name, data in configs.items():
        splits = _as_splits(name, data)
        features = next(iter(splits.values())).features
        for split, dataset in splits.items():
            if dataset.features != features:
                raise ValueError(
                    f"Config {name!r}: split {split!r} has features {dataset.features}, unlike the "
                    f"first split's {features}; one config has one schema."
                )
        # iterating in Arrow format reads a filtered/selected view's rows, not its whole backing table
        streamed[name] = ConfigBatches(features, {
            split: dataset.with_format("arrow").iter(batch_size=_BATCH_ROWS) for split, dataset in splits.items()
        })
    write_hub_folder_from_batches(streamed, output_dir, card_yaml_extra, card_body, default_config=default_config,
                                  max_shard_bytes=max_shard_bytes, overwrite=overwrite)
    return Path(output_dir)


@dataclass
class ConfigBatches:
    """One config given as Arrow batches per split, for corpora written without a ``datasets`` cache.

    Each split's batches are read once, in order, and must have ``features``' columns (their types
    are cast to ``features.arrow_schema``; a ``ClassLabel`` column holds integer ids).
    """

    features: Features
    splits: Mapping[str, Iterable[pa.Table | pa.RecordBatch]]


def write_hub_folder_from_batches(
    configs: Mapping[str, ConfigBatches],
    output_dir: str | Path,
    card_yaml_extra: Mapping[str, Any] | None = None,
    card_body: str = "",
    *,
    default_config: str | None = None,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    overwrite: bool = False,
) -> dict[str, dict[str, int]]:
    """The folder :func:`write_hub_dataset_folder` writes, from Arrow batches streamed shard by shard.

    Memory holds one batch and disk one copy of the data (the Parquet shards): a corpus of any
    size is written without an Arrow cache. Returns the rows written per config and split.
    """
    if not configs:
        raise ValueError("write_hub_folder_from_batches got no configs: pass {name: ConfigBatches}.")
    if default_config is not None and default_config not in configs:
        raise ValueError(
            f"write_hub_dataset_folder: default_config {default_config!r} is not one of {list(configs)}."
        )
    out = Path(output_dir)
    # data/ and the card are written aside and replace the old ones only when complete; a folder holding a user's
    # files is refused unless overwrite (crossner_hf.outputs.check_ours)
    with staged_outputs(out, overwrite=overwrite) as stage:
        rows = _write_configs(configs, stage, card_yaml_extra, card_body, default_config, max_shard_bytes)
    logger.info("Wrote %d config(s) to %s.", len(configs), out)
    return rows


def _write_configs(configs: Mapping[str, ConfigBatches], out: Path, card_yaml_extra: Mapping[str, Any] | None,
                   card_body: str, default_config: str | None, max_shard_bytes: int) -> dict[str, dict[str, int]]:
    data_dir = out / "data"
    data_dir.mkdir(parents=True)

    metadata: dict[str, dict[str, Any]] = {}
    infos = DatasetInfosDict()
    rows: dict[str, dict[str, int]] = {}
    for name, config in configs.items():
        if not _NAME_RE.match(name):
            raise ValueError(
                f"Config name {name!r} must start with a letter or digit and use only letters, "
                "digits, '-', '_' and '.'."
            )
        info = DatasetInfo(features=config.features, splits=SplitDict(), download_size=0, dataset_size=0)
        data_files = []
        rows[name] = {}
        for split, batches in config.splits.items():
            if not _SPLIT_RE.match(split):
                raise ValueError(f"Split name {split!r} of config {name!r} must be letters, digits or '_'.")
            examples, num_bytes, written = _write_split(batches, config.features, data_dir / name, split,
                                                        max_shard_bytes)
            info.splits.add(SplitInfo(name=split, num_bytes=num_bytes, num_examples=examples))
            info.download_size += written
            info.dataset_size += num_bytes
            data_files.append({"split": split, "path": f"data/{name}/{split}-*"})
            rows[name][split] = examples
        info.size_in_bytes = info.download_size + info.dataset_size
        infos[name] = info
        metadata[name] = {"data_files": data_files}
        if name == default_config:
            metadata[name]["default"] = True

    card_data = DatasetCardData(**dict(card_yaml_extra or {}))
    MetadataConfigs(metadata).to_dataset_card_data(card_data)
    infos.to_dataset_card_data(card_data)
    from crossner_hf.outputs import scrub_paths

    # published with the data: an absolute local path in it (a source file, a work folder) is cut to its last part
    card = DatasetCard(scrub_paths(f"---\n{card_data.to_yaml()}\n---\n\n{card_body.lstrip()}"))
    card.save(out / "README.md")
    return rows


def _write_split(batches: Iterable[pa.Table | pa.RecordBatch], features: Features, folder: Path, split: str,
                 max_shard_bytes: int) -> tuple[int, int, int]:
    """Parquet shards ``<split>-0000i-of-0000n.parquet``, a new one once a shard holds ``max_shard_bytes``
    of Arrow data; returns (rows, Arrow bytes, Parquet bytes written)."""
    folder.mkdir(parents=True, exist_ok=True)
    # the features travel in the schema metadata, as datasets' own to_parquet writes them
    schema = features.arrow_schema
    shards: list[Path] = []
    writer: pq.ParquetWriter | None = None
    rows = num_bytes = in_shard = 0
    try:
        for batch in batches:
            table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
            if not table.num_rows:
                continue
            table = table.select(schema.names).cast(schema)
            row_bytes = table.nbytes / table.num_rows
            while table.num_rows:
                if writer is None or in_shard >= max_shard_bytes:
                    if writer is not None:
                        writer.close()
                    # the shard count is known only at the end: numbered now, named "-of-N" then
                    shards.append(folder / f"{split}-{len(shards):05d}.parquet.partial")
                    writer, in_shard = pq.ParquetWriter(shards[-1], schema), 0
                # as many rows as the shard has room for (at least one), the rest go to the next shard
                take = max(1, min(table.num_rows, math.ceil((max_shard_bytes - in_shard) / row_bytes)))
                part, table = table.slice(0, take), table.slice(take)
                writer.write_table(part)
                rows += part.num_rows
                num_bytes += part.nbytes
                in_shard += part.nbytes
        if writer is None:  # an empty split is one empty shard, so the card's glob still matches a file
            shards.append(folder / f"{split}-00000.parquet.partial")
            pq.write_table(schema.empty_table(), shards[-1])
    finally:
        if writer is not None:
            writer.close()
    written = 0
    for index, path in enumerate(shards):
        final = folder / f"{split}-{index:05d}-of-{len(shards):05d}.parquet"
        path.rename(final)
        written += final.stat().st_size
    return rows, num_bytes, written
