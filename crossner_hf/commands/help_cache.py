"""A command's ``--help`` without torch or transformers: the text its parser printed, kept for this installation.

``crossner-hf COMMAND --help`` (and a runnable shim's, ``python trainer_recipes/finetune.py --help``) has to build
the command's parser, and the parser its dataclasses: ``train``, ``dapt`` and ``nerbert`` parse a config that *is*
a ``transformers.TrainingArguments`` (whose module imports torch), the RNN commands' configs live beside their torch
models, and every parser is transformers' ``HfArgumentParser``. That is 5-8 s of CPU for a page of text, where
``crossner-hf --help`` takes 0.05 s. The parser cannot be built without those imports while the configs subclass
``TrainingArguments`` (a config class cannot exist before its base), so the text is kept instead:

- the first ``--help`` (``-h``, ``--help-all``) of a command renders it as before, prints it and keeps it in
  ``$CROSSNER_HF_CACHE/help/`` (default ``~/.cache/crossner_hf/help/``; a folder that cannot be written is
  skipped: the help is printed all the same);
- a later one prints the kept text, importing nothing heavier than this module, when its key still matches: the
  command, the flag, the program name, the terminal width (argparse wraps to it), the Python, ``crossner_hf`` and
  ``transformers`` versions, the installed packages (the site-packages folder's modification time changes with
  every install and removal) and every file of the package (path, size, modification time: an edited module
  renders anew).

Only a bare ``--help`` is kept: ``--config x.yaml --help`` (whose defaults come from the file) and anything else is
parsed as always. ``tests/test_help_cache.py`` checks a kept help equals the rendered one and imports no torch.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import sysconfig
from collections.abc import Callable, Sequence
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``crossner_hf`` package folder, whose files are part of the key."""

HELP_FLAGS = {"-h": "--help", "--help": "--help", "--help-all": "--help-all"}
"""The flags whose output is kept (``-h`` and ``--help`` print the same text)."""


def help_flag(argv: Sequence[str]) -> str | None:
    """``--help`` or ``--help-all`` when ``argv`` (a command's arguments) asks for nothing but that, else None."""
    return HELP_FLAGS.get(argv[0]) if len(argv) == 1 else None


def package_files(root: Path = PACKAGE) -> list[tuple[str, int, int]]:
    """Every file of the package (and of its packaged presets and card templates, wherever they live) as
    ``(path, size, modification time in ns)``, sorted; compiled caches left out."""
    roots = [root]
    for data in ("presets", "model_cards"):  # an editable install maps these onto the checkout's folders
        folder = _resource_folder(f"{root.name}.{data}")
        if folder is not None and root not in folder.parents:
            roots.append(folder)
    found = []
    for base in roots:
        for path in base.rglob("*"):
            if "__pycache__" in path.parts or not path.is_file():
                continue
            stat = path.stat()
            found.append((str(path), stat.st_size, stat.st_mtime_ns))
    return sorted(found)


def _resource_folder(package: str) -> Path | None:
    from importlib import resources

    try:
        folder = Path(str(resources.files(package)))
    except (ModuleNotFoundError, TypeError):  # not installed, or not a folder on disk
        return None
    return folder if folder.is_dir() else None


def help_key(command: str, flag: str, prog: str, files: list[tuple[str, int, int]] | None = None) -> str:
    """What a kept help must match to be printed: see the module docstring."""
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    site = Path(sysconfig.get_paths()["purelib"])
    state = {
        "command": command, "flag": flag, "prog": prog, "columns": shutil.get_terminal_size().columns,
        "python": sys.version, "executable": sys.executable, "crossner_hf": version("crossner_hf"),
        "transformers": version("transformers"), "site": site.stat().st_mtime_ns if site.is_dir() else None,
        "files": package_files() if files is None else files,
    }
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]


def help_folder() -> Path:
    """Where kept helps live: ``help/`` of the project's cache (:func:`crossner_hf.data.target.cache_root`)."""
    from crossner_hf.data.target import cache_root

    return cache_root() / "help"


def print_help(command: str, flag: str, prog: str, render: Callable[[], object]) -> int:
    """Print ``command``'s help for ``flag`` and return the exit code: the kept text when its key matches, else
    ``render()`` (which prints the help and exits, as argparse does), its text kept for the next time."""
    path = help_folder() / f"{help_key(command, flag, prog)}.txt"
    with contextlib.suppress(OSError):  # an unreadable cache: render it
        sys.stdout.write(path.read_text(encoding="utf-8"))
        sys.stdout.flush()
        return 0
    buffer = io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(buffer):
        try:
            render()
        except SystemExit as exit_:  # argparse's --help ends so
            code = exit_.code
    text = buffer.getvalue()
    sys.stdout.write(text)
    sys.stdout.flush()
    if code in (0, None) and text:
        _keep(path, text)
    return code if isinstance(code, int) else (0 if code is None else 1)


def _keep(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all (two shells asking at once each write their own copy)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only or full cache folder: the help was printed, it is only not kept
        with contextlib.suppress(OSError):
            tmp.unlink()
