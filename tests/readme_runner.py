"""Runs documented commands in forked children of one warm interpreter (``tests/test_readme.py``).

Started once with the commands' environment; it imports the libraries the commands load (torch,
transformers, datasets, the ``crossner_hf`` CLI) and then, for each JSON job on stdin
(``{"argv": [...], "cwd": ..., "stdout": path, "stderr": path}``), forks a child that runs the
command as ``python -m crossner_hf.cli`` or ``python SCRIPT`` would (``sys.argv`` set, ``__main__``),
with its output in the files, and answers ``{"rc": exit code}``. Each command still runs in a process
of its own, as typed; what is saved is the interpreter start and the imports of :data:`WARM_IMPORTS`
(about 8 s per training command).
Commands needing another environment (a push to the fake Hub) are run by the test as plain subprocesses.
:class:`WarmRunner` is the tests' side: it starts this file and sends it the jobs (the README commands, and
every script's ``--help`` in ``tests/test_commands.py``).
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import traceback
from pathlib import Path


def _child(job: dict) -> int:
    os.chdir(job["cwd"])
    for stream, path in ((1, job["stdout"]), (2, job["stderr"])):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, stream)
        os.close(fd)
    argv = job["argv"]
    try:
        if argv[1:3] == ["-m", "crossner_hf.cli"]:
            from crossner_hf.cli import main

            sys.argv = ["crossner-hf", *argv[3:]]
            return int(main(argv[3:]) or 0)
        sys.argv = argv[1:]
        runpy.run_path(argv[1], run_name="__main__")
        return 0
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # the command's own failure: its traceback goes to its stderr file
        traceback.print_exc()
        return 1


WARM_IMPORTS = (
    "datasets", "torch", "transformers", "crossner_hf.cli",
    # transformers imports these lazily, on a command's first Trainer, TrainingArguments or model: without them
    # each child re-imported ~5 s of modules (seqeval's scorer imports scikit-learn)
    "transformers.trainer", "transformers.training_args", "transformers.modeling_utils",
    "transformers.models.bert.modeling_bert", "transformers.data.data_collator", "accelerate", "seqeval.metrics",
    "crossner_hf.training.schedules", "crossner_hf.commands.train", "crossner_hf.inference.tagger",
)
"""Modules the server imports before its first job, so that the forked children inherit them."""


def serve() -> None:
    import importlib

    for name in WARM_IMPORTS:
        importlib.import_module(name)

    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            rc = 1
            try:
                rc = _child(job)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(rc)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"rc": os.waitstatus_to_exitcode(status)}), flush=True)


class WarmRunner:
    """This file started as a server in ``cwd`` with ``env``; :meth:`run` runs one command in a forked child."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.cwd, self.jobs = Path(cwd), 0
        self.proc = subprocess.Popen([sys.executable, __file__], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def run(self, argv: list[str], cwd: Path | None = None) -> tuple[int, str, str]:
        """``argv`` as ``[python, -m, crossner_hf.cli, ...]`` or ``[python, SCRIPT, ...]``: (exit code, stdout,
        stderr)."""
        self.jobs += 1
        # the output files stay in the runner's folder whichever folder the command runs in
        out, err = self.cwd / f".cmd-{self.jobs}.out", self.cwd / f".cmd-{self.jobs}.err"
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd or self.cwd), "stdout": str(out),
                                          "stderr": str(err)})
                              + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, f"the warm runner died running {argv}"
        return (json.loads(answer)["rc"], out.read_text(errors="replace"), err.read_text(errors="replace"))

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


if __name__ == "__main__":
    serve()
