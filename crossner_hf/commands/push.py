"""Push an existing model or dataset folder to the Hugging Face Hub.

Usage:
    crossner-hf push outputs/politics-direct user/crossner-politics          # a trained model
    crossner-hf push crossner user/crossner --repo_type dataset --private     # a built dataset

The repo is created if needed; the folder's type is detected (``config.json`` + weights: a
model; ``data/*.parquet``: a dataset) unless ``--repo_type`` says it. ``HF_ENDPOINT`` and
``HF_TOKEN`` are honoured. A failure exits with status 1 and one line on standard error; the
token is never printed and the folder is left as it was.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from crossner_hf.arguments import make_command_parser


@dataclass
class PushArguments:
    folder: str = field(metadata={"positional": True, "help": "The folder to upload (it needs a README.md card)."})
    repo_id: str = field(metadata={"positional": True, "help": "Target repo, e.g. user/crossner-politics."})
    repo_type: str | None = field(
        default=None, metadata={"help": "model or dataset (default: detected from the folder).",
                                "choices": ["model", "dataset"]},
    )
    private: bool = field(default=False, metadata={"help": "Create the repo as private."})
    token: str | None = field(default=None, metadata={"help": "Hub token (default: HF_TOKEN or the stored login)."})
    commit_message: str | None = field(default=None, metadata={"help": "Commit message."})
    revision: str | None = field(default=None, metadata={"help": "Branch to push to (default: main)."})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "push", (PushArguments,), prog="crossner-hf push",
        help="push a model or dataset folder to the Hub", description=__doc__,
    )


def main(args: PushArguments) -> int:
    from crossner_hf.publishing.hub import PushError, push_to_hub

    try:
        url = push_to_hub(args.folder, args.repo_id, repo_type=args.repo_type, private=args.private,
                          token=args.token, commit_message=args.commit_message, revision=args.revision)
    except PushError as err:
        print(f"crossner-hf push: error: {err}", file=sys.stderr)
        return 1
    print(url)
    return 0
