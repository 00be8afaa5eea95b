"""One module per ``crossner-hf`` subcommand, each with ``make_parser()`` and ``main(args)``.

The shape is TRL's (``trl/scripts/*.py``): ``make_parser(subparsers=None)`` returns a
:class:`~crossner_hf.arguments.CrossNERParser` (added to ``subparsers`` when given, so the
``crossner-hf`` CLI can list it), and ``main(args)`` runs the command on the parsed
arguments dataclass. The runnable files in ``dataset_scripts/`` and ``trainer_recipes/``
are thin shims over these modules, so a non-editable install has every command.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from typing import Any

from crossner_hf.arguments import CrossNERParser
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
    except (*USER_ERRORS, OSError, UnicodeDecodeError) as err:
        if debug:
            raise
        print(f"{parser.prog}: error: {one_line(err)}", file=sys.stderr)
        return 2
    return result if isinstance(result, int) else 0


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
