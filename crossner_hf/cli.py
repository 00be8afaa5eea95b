"""The ``crossner-hf`` command: it dispatches to :mod:`crossner_hf.commands` and runs the command with one-line errors.

``crossner-hf --help`` lists the commands of :data:`crossner_hf.grid.cells.COMMAND_TABLE` (the one list of them) without
importing any; ``crossner-hf COMMAND --help`` lists a command's flags (after the first time, the text kept by
:mod:`crossner_hf.commands.help_cache`, without importing the command). Every command takes a YAML
file of flags (``--config x.yaml``, or a packaged preset by name: ``--config paper/crossner_direct``).
:func:`run_command` parses and runs one command, a user error one line on stderr (exit 2); the runnable shims in
``dataset_scripts/`` and ``trainer_recipes/`` end in :func:`shim_exit`, so they and ``crossner-hf`` are one command.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from crossner_hf.extras import MissingExtraError
from crossner_hf.grid.cells import COMMAND_TABLE

if TYPE_CHECKING:  # the parser module imports transformers' HfArgumentParser: `crossner-hf --help` stays without it
    from crossner_hf.arguments import CrossNERParser

COMMANDS: dict[str, str] = {name: module for name, (module, _) in COMMAND_TABLE.items()}
SUMMARIES: dict[str, str] = {name: summary for name, (_, summary) in COMMAND_TABLE.items()}


DESCRIPTION = ("Cross-domain NER for the Hugging Face ecosystem (CrossNER, NER-BERT, cross-domain LM). "
               "`crossner-hf COMMAND --help` lists a command's flags; every command takes a YAML file of flags "
               "(--config FILE.yaml, or a packaged preset by name: --config paper/crossner_direct).")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser: command names and summaries only (a plain argparse parser, no imports)."""
    parser = argparse.ArgumentParser(
        allow_abbrev=False, prog="crossner-hf", description=DESCRIPTION,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        sub.add_parser(name, help=SUMMARIES[name], add_help=False)
    return parser


def command_parser(name: str) -> tuple[object, object]:
    """``(module, parser)`` of one command, its parser named ``crossner-hf NAME``; only that module is imported."""
    from crossner_hf.arguments import CrossNERParser

    module = importlib.import_module(f"crossner_hf.commands.{COMMANDS[name]}")
    holder = argparse.ArgumentParser(prog="crossner-hf", allow_abbrev=False)
    sub = holder.add_subparsers(parser_class=CrossNERParser)
    return module, module.make_parser(sub)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        build_parser().print_help()
        return 0 if argv else 2
    command = argv[0]
    if command not in COMMANDS:
        build_parser().error(f"unknown command {command!r}; choose one of {', '.join(COMMANDS)}.")
    from crossner_hf.commands.help_cache import help_flag, print_help  # here: the listing above imports no command

    flag = help_flag(argv[1:])
    try:
        if flag is not None:  # the kept text when this installation would print the same (commands/help_cache.py);
            # it ends as argparse's --help ends, in SystemExit
            sys.exit(print_help(command, flag, f"crossner-hf {command}",
                                lambda: command_parser(command)[1].parse_args([flag])))
        module, parser = command_parser(command)
    except MissingExtraError as err:  # a command module that needs an extra at import time
        print(f"crossner-hf {command}: error: {err}", file=sys.stderr)
        return 2
    return run_command(module.make_parser, module.main, argv[1:], parser=parser)


# ----------------------------------------------------------------- running one command

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
        # one object per dataclass of the parser: train's are its inputs and its FinetuneConfig
        result = main(*parser.parse_args_and_config(argv))
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


def shim_exit(command: str) -> NoReturn:
    """The end of a runnable shim (``trainer_recipes/finetune.py``, ...): the command named as ``crossner-hf`` names it
    (``train``), run as ``crossner-hf`` runs it, under the shim's own program name. Its module is imported only
    here, so the shim's bare ``--help`` is the kept text as ``crossner-hf``'s is
    (:mod:`crossner_hf.commands.help_cache`). It ends with ``sys.exit``, not :func:`exit_process`: a file is also
    run inside a host interpreter that must live on (a notebook's ``%run``, ``runpy`` in a test)."""
    from crossner_hf.commands.help_cache import help_flag, print_help

    def module():
        return importlib.import_module(f"crossner_hf.commands.{COMMANDS[command]}")

    flag = help_flag(sys.argv[1:])
    if flag is not None:
        # the shim's parser names its own program (trainer_recipes/finetune.py), however the file was reached
        sys.exit(print_help(command, flag, "script", lambda: module().make_parser().parse_args([flag])))
    commands = module()
    sys.exit(run_command(commands.make_parser, commands.main))


def run() -> NoReturn:
    """The ``crossner-hf`` program (the console script and ``python -m crossner_hf.cli``): :func:`main`, then
    :func:`exit_process`."""
    exit_process(_code_of(main))


def _code_of(command: Any) -> int:
    """``command()``'s exit code, a ``SystemExit`` (argparse's usage error, ``--help``) read as the interpreter reads
    it: None is 0, a number itself, anything else printed to stderr and 1. Other exceptions propagate, so an
    unexpected failure still ends in the interpreter's traceback and exit code 1."""
    try:
        code = command()
    except SystemExit as exit_:
        code = exit_.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            return 1
    return 0 if code is None else int(code)


def exit_process(code: int) -> NoReturn:
    """End the ``crossner-hf`` process with ``code`` as the interpreter's exit would, less the teardown of its modules.

    A command process holds torch, transformers and datasets: some 4,000 modules whose teardown at exit took about
    2 s of CPU here (more than a short command's own work; a grid's cells pay it each). What a normal exit does that
    anybody can observe is done, in the interpreter's order (``Py_FinalizeEx``): non-daemon threads are joined (and
    ``concurrent.futures`` pools shut down), then the ``atexit`` handlers run (logging's flush, ``weakref.finalize``
    callbacks such as ``TemporaryDirectory``'s cleanup, multiprocessing's and Ray's shutdown), then the standard
    streams are flushed; only then ``os._exit``. Files this library writes are closed where they are written
    (``with``), so nothing waits on the teardown's garbage collection. In an interpreter that must live on
    (interactive, IPython's ``%run -m``) it is ``sys.exit``. Library code never calls this: only :func:`run`."""
    import atexit
    import os
    import threading

    # CPython's own first step of finalisation, threading._shutdown (private, and the only way to run threading's
    # exit hooks, which stop concurrent.futures' idle workers before the join), runs on the main thread; anywhere
    # else (a host interpreter, another Python, another thread) the interpreter's own exit is taken
    shutdown = getattr(threading, "_shutdown", None)
    if sys.flags.interactive or hasattr(sys, "ps1") or "IPython" in sys.modules or shutdown is None \
            or threading.current_thread() is not threading.main_thread():
        sys.exit(code)
    try:
        shutdown()
    except KeyboardInterrupt:  # Ctrl-C while threads finish: the interpreter ignores it there and keeps the code
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe (`crossner-hf ... | head`) or a closed stream: nothing to add
            code = code or 120  # what the interpreter returns when it cannot flush stdout at exit
    try:  # what libc's exit() would flush: a native library's buffered writes to stdout (a cell's log file)
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to ask (not POSIX): nothing buffered there we could reach
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
