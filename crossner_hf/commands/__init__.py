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
