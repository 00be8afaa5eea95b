"""A command's bare ``--help`` (``crossner-hf dapt --help``, ``python trainer_recipes/finetune.py --help``): rendered
once by the command's parser, then printed from the kept text without importing torch or transformers, the same
text; a changed package file, width or flag renders it anew; an unwritable cache only costs the keeping."""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from crossner_hf.commands import help_cache

ROOT = Path(__file__).resolve().parents[1]

HEAVY = ("torch", "transformers", "datasets")

PROBE = """
import json, sys
{run}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {heavy!r})), file=sys.stderr)
"""


def _fresh(run: str, tmp_path: Path, env: dict[str, str]) -> tuple[str, list[str]]:
    """stdout of ``run`` in a fresh interpreter, and the heavy modules it imported."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE.format(run=run, heavy=HEAVY))
    out = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    return out.stdout, json.loads(out.stderr.strip().splitlines()[-1])


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CROSSNER_HF_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps to the terminal: the same width in and out of process
    return {**os.environ}


def _steady(check, attempts: int = 3):
    """``check()`` over a package no one edited meanwhile: in a shared working tree another edit renews the key (as
    it should) between the two runs; the check is then taken again, at most ``attempts`` times."""
    for _ in range(attempts):
        before = help_cache.package_files()
        result = check()
        if help_cache.package_files() == before:
            return result
    pytest.skip("the package's files kept changing while the help was rendered and printed again")


def test_a_commands_help_is_printed_again_without_torch_the_same_text(cache_env, tmp_path, capsys):
    from crossner_hf.cli import main

    def render_then_print(argv: list[str]) -> tuple[str, str, list[str]]:
        with pytest.raises(SystemExit) as done:  # rendered by the parser (DAPTConfig is a TrainingArguments: torch)
            main(argv)
        assert done.value.code == 0
        rendered = capsys.readouterr().out
        code = f"from crossner_hf.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit as e:\n" \
               "    assert e.code == 0"
        return (rendered, *_fresh(code, tmp_path, cache_env))

    rendered, printed, heavy = _steady(lambda: render_then_print(["dapt", "--help"]))
    assert "--masking" in rendered and "--model_name_or_path" in rendered
    assert printed == rendered and heavy == []
    # -h is the same request, printed from the same text
    code = "from crossner_hf.cli import main\ntry:\n    main(['dapt', '-h'])\nexcept SystemExit as e:\n" \
           "    assert e.code == 0"
    printed, heavy = _steady(lambda: _fresh(code, tmp_path, cache_env))
    assert printed == rendered and heavy == []


def test_a_shims_help_is_kept_under_its_own_program_name(cache_env, tmp_path, capsys, monkeypatch):
    shim = ROOT / "trainer_recipes" / "finetune.py"
    code = f"import runpy, sys\nsys.argv = [{str(shim)!r}, '--help']\ntry:\n    runpy.run_path(sys.argv[0], " \
           "run_name='__main__')\nexcept SystemExit as e:\n    assert e.code == 0"

    def render_then_print() -> tuple[str, str, list[str]]:
        monkeypatch.setattr(sys, "argv", [str(shim), "--help"])
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(shim), run_name="__main__")
        assert done.value.code == 0
        return (capsys.readouterr().out, *_fresh(code, tmp_path, cache_env))

    rendered, printed, heavy = _steady(render_then_print)
    assert rendered.startswith("usage: trainer_recipes/finetune.py")
    assert printed == rendered and heavy == []


def test_the_key_follows_the_package_files_the_width_and_the_flag(monkeypatch):
    files = [("crossner_hf/commands/dapt.py", 100, 1)]
    key = help_cache.help_key("dapt", "--help", "crossner-hf dapt", files)
    assert key == help_cache.help_key("dapt", "--help", "crossner-hf dapt", list(files))
    assert key != help_cache.help_key("dapt", "--help", "crossner-hf dapt", [("crossner_hf/commands/dapt.py", 100, 2)])
    assert key != help_cache.help_key("dapt", "--help", "crossner-hf dapt", [("crossner_hf/commands/dapt.py", 101, 1)])
    assert key != help_cache.help_key("dapt", "--help-all", "crossner-hf dapt", files)
    assert key != help_cache.help_key("train", "--help", "crossner-hf train", files)
    monkeypatch.setenv("COLUMNS", "61")
    assert key != help_cache.help_key("dapt", "--help", "crossner-hf dapt", files)
    listed = {path for path, _, _ in help_cache.package_files()}
    assert str(Path(help_cache.__file__).resolve()) in listed  # an edited module is seen
    assert any(path.endswith(".yaml") for path in listed)  # and an edited preset


def test_only_a_bare_help_is_kept():
    assert help_cache.help_flag(["--help"]) == help_cache.help_flag(["-h"]) == "--help"
    assert help_cache.help_flag(["--help-all"]) == "--help-all"
    for argv in (["--config", "x.yaml", "--help"], ["--help", "--domain", "ai"], [], ["--helpful"]):
        assert help_cache.help_flag(argv) is None  # parsed as always: a YAML file's defaults change the text


def test_an_unwritable_cache_still_prints_the_help(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("CROSSNER_HF_CACHE", str(blocker))
    from crossner_hf.cli import main

    with pytest.raises(SystemExit) as done:
        main(["data", "--help"])
    assert done.value.code == 0
    assert "--dataset_dir" in capsys.readouterr().out and blocker.is_file()
