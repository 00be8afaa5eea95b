"""One module per ``crossner-hf`` subcommand, each with ``make_parser()`` and ``main(args)``.

The shape is TRL's (``trl/scripts/*.py``): ``make_parser(subparsers=None)`` returns a
:class:`~crossner_hf.arguments.CrossNERParser` (added to ``subparsers`` when given, so the
``crossner-hf`` CLI can list it), and ``main(args)`` runs the command on the parsed
arguments dataclass. The runnable files in ``dataset_scripts/`` and ``trainer_recipes/``
are thin shims over these modules, so a non-editable install has every command.

What every command shares lives here: :func:`make_command_parser`, :func:`run_command` (one-line errors) and the
labeled-data flags, declared once (:class:`LabeledDataArguments`: ``--domain`` / ``--dataset_dir SOURCE``,
``--text_column_name``, ``--label_column_name``, ``--strict``, ``--data_dir``, ``--data_name``; ``train``,
``bilstm-crf``, ``cdlm``, ``multicell`` (through :mod:`crossner_hf.commands.rnn_args`), ``export``,
``build-corpora``, ``data``, ``adapt`` and ``compare`` take it as it is; ``predict``, ``report``, ``confusion`` and
``plot-entities`` take :class:`SplitDataArguments`, the same flags plus ``--split``). Every one of them loads its
target through :func:`crossner_hf.data.target.load_target` (:meth:`LabeledDataArguments.load_target`), so a source
opens, fails and is named the same way whatever the command.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossner_hf.arguments import CrossNERParser
from crossner_hf.data.columns import LABEL_COLUMN_HELP, STRICT_HELP, TEXT_COLUMN_HELP
from crossner_hf.data.labels import CONFIGS
from crossner_hf.extras import MissingExtraError


def make_command_parser(
    subparsers: Any | None, name: str, dataclass_types: Sequence[type], *, help: str, description: str,
    prog: str | None = None,
) -> CrossNERParser:
    """The command's parser: a sub-parser of ``crossner-hf`` or a standalone one for a script."""
    if subparsers is not None:
        return subparsers.add_parser(
            name, dataclass_types=list(dataclass_types), help=help, description=description,
        )
    return CrossNERParser(list(dataclass_types), prog=prog, description=description)


USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, MissingExtraError)
"""Errors that mean "the input needs fixing": the CLI prints their one-line message, no traceback."""


def run_command(
    make_parser: Any, main: Any, argv: Sequence[str] | None = None, parser: CrossNERParser | None = None
) -> int:
    """Parse ``argv`` (``--config`` honoured) and run ``main``; a user error is one line on stderr, exit 2.

    User errors are the project's own (``ValueError`` and friends, ``MissingExtraError``) and the
    known library failures at the boundary: I/O (``PermissionError``, ``IsADirectoryError``, a full
    disk: any ``OSError``) and undecodable input. ``--debug`` (anywhere in ``argv``) or
    ``CROSSNER_HF_DEBUG=1`` shows the full traceback instead.
    """
    import os

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or bool(os.environ.get("CROSSNER_HF_DEBUG"))
    argv = [a for a in argv if a != "--debug"]
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    parser = parser if parser is not None else make_parser()
    try:
        (args,) = parser.parse_args_and_config(argv)
        result = main(args)
    except KeyboardInterrupt as err:  # Ctrl-C: one line, the shell's 130 (a grid says what it kept)
        if debug:
            raise
        close_progress_bars()
        print(f"{parser.prog}: {getattr(err, 'message', 'interrupted')}", file=sys.stderr)
        return 130
    except Exception as err:
        # a full disk surfaces as OSError, safetensors' SafetensorError or torch's RuntimeError, deep in a
        # save: one line naming the folder and the space, whatever raised it
        full = disk_full_message(err, argv)
        if debug or (full is None and not isinstance(err, (*USER_ERRORS, OSError, UnicodeDecodeError))):
            raise
        close_progress_bars()  # a bar closed later would print its last frame after the error line
        print(f"{parser.prog}: error: {full or one_line(err)}", file=sys.stderr)
        return 2
    return result if isinstance(result, int) else 0


WRITE_FAILURES = ("unexpected pos", "iostream error", "failed writing file")
"""What torch's writer says when a write stops short (a full disk among the causes)."""


def _chain(err: BaseException):
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def disk_full_message(err: BaseException, argv: Sequence[str]) -> str | None:
    """One line for a full disk (``ENOSPC`` anywhere in the exception chain): the folder being written, the
    space left there and about how much the run writes at a time; ``None`` for any other error."""
    import errno
    import shutil
    from pathlib import Path

    said = any((isinstance(e, OSError) and e.errno == errno.ENOSPC) or "No space left on device" in str(e)
               for e in _chain(err))
    # torch.save says only "unexpected pos N vs M" / "iostream error" when its writes stop short
    short_write = any(isinstance(e, RuntimeError) and any(k in str(e) for k in WRITE_FAILURES) for e in _chain(err))
    if not (said or short_write):
        return None
    folder = next((Path(argv[i + 1]) for i, a in enumerate(argv[:-1])
                   if a in ("--output_dir", "--output", "--work_dir")), Path.cwd())
    probe = next((p for p in (folder, *folder.parents) if p.exists()), Path.cwd())
    usage = shutil.disk_usage(probe)
    free = usage.free
    if not said and free > max(64 * 2**20, usage.total // 100):
        return None  # a failed write on a disk with room left: not this
    largest = max((p.stat().st_size for p in probe.rglob("*") if p.is_file()), default=0) if probe.is_dir() \
        and probe != Path("/") else 0
    from crossner_hf.data.check import human_size

    need = (f"; it writes files of up to {human_size(largest)} at a time (a checkpoint holds the weights and "
            f"the optimiser state, about three times the weights)") if largest else ""
    return (f"no space left on the device holding {folder} ({human_size(free)} free{need}); free space or "
            "choose another folder, then rerun with --resume_from_checkpoint true: what was being written is "
            "not counted as complete.")


def close_progress_bars() -> None:
    """Close every open tqdm bar (``datasets``' and ``transformers``' are tqdm's), so an error line ends the output."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()


def one_line(err: BaseException) -> str:
    """The error as one line: what failed, on which file, and (for the project's errors) the fix."""
    if isinstance(err, UnicodeDecodeError):
        return (f"input is not UTF-8 text (byte {err.start}: {err.reason}); pass UTF-8 files "
                "(--debug shows where it was read)")
    if isinstance(err, OSError) and not isinstance(err, (FileNotFoundError, NotADirectoryError)) \
            and err.filename is not None:
        fix = {13: "choose a writable location or fix the permissions", 21: "pass a file, not a folder",
               28: "free disk space"}.get(err.errno or 0, "check the path")
        return f"{err.strerror or type(err).__name__}: {err.filename}; {fix}."
    return " ".join(str(err).split())


def set_torch_threads(threads: int | None) -> None:
    """``--threads N`` for a PyTorch model (an ONNX folder gets N through ``Tagger.from_pretrained(threads=N)``)."""
    if threads is None:
        return
    if threads < 1:
        raise ValueError(f"--threads {threads}: give a positive number of CPU threads.")
    import torch

    torch.set_num_threads(threads)


def shim_exit(make_parser: Any, main: Any) -> None:
    sys.exit(run_command(make_parser, main))


# ----------------------------------------------------------------- the labeled-data flags

SPLITS = ("train", "validation", "test")

DOMAIN_HELP = "A CrossNER config, or give --dataset_dir."
DATASET_DIR_HELP = "Your data: a CoNLL folder, JSON Lines / CSV / Parquet files, a Hub id (docs/own_domain.md)."


@dataclass
class LabeledDataArguments:
    """Where the labeled data is and how to read it: the one declaration of the data flags."""

    domain: str | None = field(default=None, metadata={"help": DOMAIN_HELP, "choices": list(CONFIGS)})
    dataset_dir: str | None = field(default=None, metadata={"help": DATASET_DIR_HELP})
    text_column_name: str | None = field(default=None, metadata={"help": TEXT_COLUMN_HELP})
    label_column_name: str | None = field(default=None, metadata={"help": LABEL_COLUMN_HELP})
    strict: bool = field(default=True, metadata={"help": STRICT_HELP})
    data_dir: str | None = field(default=None, metadata={
        "help": "The CrossNER files for --domain: <config>/{train,dev,test}.txt (default: $CROSSNER_DATA_DIR)."})
    data_name: str | None = field(default=None, metadata={
        "help": "Your data's name in tables and cards (default: its card's pretty_name, else its folder's)."})

    def __post_init__(self):
        parent = getattr(super(), "__post_init__", None)  # cooperative: train's FinetuneConfig comes after this class
        if parent is not None:
            parent()

    def target_source(self, default: str | None = None) -> str | Path | None:
        """``--dataset_dir`` when given, else ``--domain``, else ``default``
        (:func:`crossner_hf.data.target.target_source`'s one rule)."""
        from crossner_hf.data.target import target_source

        domain = self.domain or default
        if not self.dataset_dir and domain is None:
            return None
        return target_source(self.dataset_dir, str(domain))

    def load_target(self, default: str | None = None) -> Any:
        """The :class:`~crossner_hf.data.target.TargetData` the flags name, through
        :func:`~crossner_hf.data.target.load_target`; one line naming both flags when neither is given."""
        from crossner_hf.data.target import load_target

        source = self.target_source(default)
        if source is None:
            raise ValueError("name the data: --dataset_dir SOURCE (your data: a CoNLL folder, JSON Lines / CSV / "
                             f"Parquet files, a Hub id) or --domain (a CrossNER config: {', '.join(CONFIGS)}).")
        return load_target(source, data_dir=self.data_dir, strict=self.strict, text_column=self.text_column_name,
                           label_column=self.label_column_name, name=self.data_name)


@dataclass
class SplitDataArguments(LabeledDataArguments):
    """:class:`LabeledDataArguments` plus the split a command tags or scores (``predict``)."""

    split: str = field(default="test", metadata={"help": "The split to score.", "choices": list(SPLITS)})


def labeled_target(args: Any, config: str | None = None) -> Any:
    """The :class:`~crossner_hf.data.target.TargetData` of ``args``' data flags: ``--dataset_dir`` when given, else
    ``--domain``, else ``config`` (a command's default target)."""
    if isinstance(args, LabeledDataArguments):
        return args.load_target(config)
    from crossner_hf.data.target import load_target, target_source  # an object with the flags' attributes

    domain = getattr(args, "domain", None) or config
    return load_target(target_source(args.dataset_dir, str(domain)), data_dir=getattr(args, "data_dir", None),
                       strict=args.strict, text_column=args.text_column_name, label_column=args.label_column_name,
                       name=getattr(args, "data_name", None))


def load_labeled(args: Any, config: str | None = None) -> tuple[str, Any]:
    """``(name, DatasetDict)`` of :func:`labeled_target`."""
    target = labeled_target(args, config)
    return target.name, target.dataset
