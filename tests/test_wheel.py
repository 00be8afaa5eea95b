"""The built wheel works outside the checkout: every command's --help, a paper-scale dry run (the presets
are package data), a preset by name, and a smoke train -> predict.

The wheel is installed (without dependencies) into a fresh virtual environment whose only other
site directory is the test environment's (for torch, transformers, ...), and every command runs
from a temporary folder, so nothing of the source tree can be imported or read by path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from crossner_hf.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> dict:
    """A fresh environment with the wheel of this checkout installed: its bin folder and environment."""
    work = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools leaves build/ behind, and a stale build/lib would be packed into the wheel
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".venv", "build", "dist", ".git", "*.egg-info",
                                                                 "__pycache__", ".pytest_cache"))
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(work / "dist"), str(source)], capture_output=True, text=True)
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = (work / "dist").glob("crossner_hf-*.whl")
    env_dir = work / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # the test environment's packages as dependencies; a .pth line adds the folder, not its .pth files, so
    # the editable install of the checkout is not seen
    Path(site, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                              "--no-index", "-q", str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    run_dir = work / "elsewhere"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    return {"bin": env_dir / "bin", "cwd": run_dir, "env": env, "python": python}


HELP_ALL = """
import contextlib, io, sys
from crossner_hf.cli import COMMANDS, main
ok = []
for command in sorted(COMMANDS):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main([command, "--help"])
        except SystemExit as exit_:
            if exit_.code not in (0, None):
                sys.exit(f"{command} --help exited {exit_.code}")
    if not out.getvalue().startswith("usage: crossner-hf " + command):
        sys.exit(f"{command} --help printed {out.getvalue()[:200]!r}")
    ok.append(command)
print("ok", *ok)
"""


def _run(installed: dict, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([str(installed["bin"] / "crossner-hf"), *args], cwd=installed["cwd"], env=installed["env"],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow  # builds and installs a wheel (about a minute on a quiet machine)
def test_the_installed_wheel_runs_every_command_outside_the_checkout(installed, crossner_data_dir, tiny_bert_dir):
    where = subprocess.run([str(installed["python"]), "-c", "import crossner_hf; print(crossner_hf.__file__)"],
                           cwd=installed["cwd"], env=installed["env"], capture_output=True, text=True, check=True)
    assert str(ROOT) not in where.stdout, where.stdout  # the installed copy, not the checkout
    top = _run(installed, "--help")  # the console script itself
    assert top.returncode == 0 and all(command in top.stdout for command in COMMANDS), top.stderr[-2000:]
    # every command's --help in one process of the installed package (one interpreter start, not fifteen)
    every = subprocess.run([str(installed["python"]), "-c", HELP_ALL], cwd=installed["cwd"], env=installed["env"],
                           capture_output=True, text=True, timeout=600)
    assert every.returncode == 0 and every.stdout.split() == ["ok", *sorted(COMMANDS)], every.stderr[-3000:]
    dry = _run(installed, "reproduce", "crossner-table2", "--scale", "paper", "--output_dir", "t2", "--dry_run")
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "500 cells" in dry.stdout and "--config paper/crossner_direct" in dry.stdout
    preset = _run(installed, "train", "--config", "paper/crossner_joint", "--help")
    assert preset.returncode == 0, preset.stderr[-2000:]
    out = installed["cwd"] / "run"
    env = {**installed["env"], "CROSSNER_DATA_DIR": str(crossner_data_dir),
           "CROSSNER_HF_CACHE": str(installed["cwd"] / "cache")}
    train = subprocess.run([str(installed["bin"] / "crossner-hf"), "train", "--model_name_or_path", tiny_bert_dir,
                            "--domain", "politics", "--max_steps", "2", "--few_shot", "8", "--use_cpu", "true",
                            "--per_device_train_batch_size", "4", "--output_dir", str(out), "--disable_tqdm", "true"],
                           cwd=installed["cwd"], env=env, capture_output=True, text=True, timeout=900)
    assert train.returncode == 0, train.stderr[-3000:]
    predict = subprocess.run([str(installed["bin"] / "crossner-hf"), "predict", "--model", str(out),
                              "--conll", str(crossner_data_dir / "politics" / "test.txt")],
                             cwd=installed["cwd"], env=env, capture_output=True, text=True, timeout=900)
    assert predict.returncode == 0, predict.stderr[-3000:]
    assert "f1" in (predict.stdout + predict.stderr).lower()


def test_setup_cfg_lists_every_package_of_the_tree():
    """A subpackage missing from setup.cfg is missing from the wheel (as crossner_hf.reproduce once was)."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    listed = set(config["options"]["packages"].split())
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "crossner_hf").rglob("__init__.py")}
    assert found - listed == set(), f"setup.cfg [options] packages lacks {sorted(found - listed)}"
    mapped = dict(line.split(" = ") for line in config["options"]["package_dir"].strip().splitlines())
    assert {"crossner_hf.model_cards", "crossner_hf.presets", "crossner_hf.presets.paper"} <= listed & set(mapped)
    for package, folder in mapped.items():
        assert (ROOT / folder / "__init__.py").is_file(), package
