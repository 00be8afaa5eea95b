"""Every command and script answers --help; commands live in the package and errors are one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from readme_runner import WarmRunner

from crossner_hf.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(
    p.relative_to(ROOT).as_posix()
    for folder in ("dataset_scripts", "trainer_recipes", "benchmarks")
    for p in (ROOT / folder).glob("*.py")
)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=ENV, cwd=ROOT, **kw)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_cli_command_has_help(command, capsys):
    # in this process: the console script's own start is tested by test_top_level_help_lists_every_command
    # and by tests/test_wheel.py, which runs every command's --help from an installed wheel
    from crossner_hf.cli import main

    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code in (0, None)
    assert out.startswith(f"usage: crossner-hf {command}") and "FILE.yaml" in out


@pytest.fixture(scope="module")
def warm(tmp_path_factory):
    """Scripts run as ``python SCRIPT --help`` would, in forked children of one warm interpreter
    (``tests/readme_runner.py``): ~4 s of interpreter start and imports saved per script."""
    runner = WarmRunner(tmp_path_factory.mktemp("scripts"), ENV)
    yield runner
    runner.close()


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_script_has_help(script, warm):
    rc, out, err = warm.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT)
    assert rc == 0, err[-2000:]
    assert out.startswith("usage:"), out[:200]


def test_top_level_help_lists_every_command():
    res = _run([sys.executable, "-m", "crossner_hf.cli", "--help"])
    assert res.returncode == 0
    for command in COMMANDS:
        assert command in res.stdout


def test_train_help_is_short_and_help_all_is_complete():
    short = _run([sys.executable, "-m", "crossner_hf.cli", "train", "--help"]).stdout
    full = _run([sys.executable, "-m", "crossner_hf.cli", "train", "--help-all"]).stdout
    # the CrossNER flags come before any inherited TrainingArguments flag
    assert short.index("--domain") < short.index("--learning_rate")
    assert "--gradient_accumulation_steps" not in short and "--gradient_accumulation_steps" in full
    # the recipe's own flags (about 50, four lines each at 80 columns) against the hundreds TrainingArguments adds
    assert len(short.splitlines()) < 220 < len(full.splitlines())


def test_shims_and_cli_are_the_same_command():
    from crossner_hf.cli import COMMANDS
    from crossner_hf.commands import build_dataset, dapt, train

    for shim, command, module in (("dataset_scripts/crossner.py", "build-dataset", build_dataset),
                                  ("trainer_recipes/dapt.py", "dapt", dapt),
                                  ("trainer_recipes/finetune.py", "train", train)):
        text = (ROOT / shim).read_text()
        # the shim runs the command crossner-hf runs under that name (cli.shim_exit), whose module is this one
        assert f'shim_exit("{command}")' in text and "from crossner_hf.cli import shim_exit" in text
        assert f"crossner_hf.commands.{COMMANDS[command]}" == module.__name__
        assert len(text.splitlines()) < 15  # a shim, not a second implementation


def test_choices_are_enforced_by_the_parser():
    res = _run([sys.executable, "-m", "crossner_hf.cli", "train", "--domain", "sports"])
    assert res.returncode == 2 and "invalid choice: 'sports'" in res.stderr
    res = _run([sys.executable, "-m", "crossner_hf.cli", "predict", "--model", "x", "--decoding", "greedy", "t"])
    assert res.returncode == 2 and "invalid choice: 'greedy'" in res.stderr


def test_user_errors_are_one_line(tmp_path):
    res = _run([sys.executable, "-m", "crossner_hf.cli", "stats", "--data_dir", str(tmp_path), "--configs", "ai"])
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("crossner-hf stats: error:") and "--data_dir" in last and "Traceback" not in res.stderr


def test_unknown_yaml_key_and_list_flags(tmp_path):
    from crossner_hf.commands.train import make_parser

    cfg = tmp_path / "run.yaml"
    cfg.write_text("domain: music\nseeds: [1, 2]\n")
    (args, config) = make_parser().parse_args_and_config(["--config", str(cfg), "--output_dir", str(tmp_path)])
    assert args.domain == "music" and config.seed_list() == [1, 2]
    (args, config) = make_parser().parse_args_and_config(["--seeds", "555", "666", "--output_dir", str(tmp_path),
                                                          "--domain", "ai"])
    assert config.seed_list() == [555, 666]
    (args, config) = make_parser().parse_args_and_config(["--seeds", "555,666,777", "--output_dir", str(tmp_path),
                                                          "--domain", "ai"])
    assert config.seed_list() == [555, 666, 777]
    bad = tmp_path / "bad.yaml"
    bad.write_text("domian: music\n")
    with pytest.raises(ValueError, match="unknown keys \\['domian'\\]"):
        make_parser().parse_args_and_config(["--config", str(bad)])


def test_default_output_dir_and_ignored_source_flags(tmp_path, caplog):
    from crossner_hf.commands.train import make_parser
    from crossner_hf.training.training_args import FinetuneConfig

    # no --output_dir: the config leaves it to the runner, which names it after the data (tests/test_runners.py)
    (_, config) = make_parser().parse_args_and_config(["--domain", "music", "--schedule", "joint"])
    assert config.output_dir is None and FinetuneConfig().output_dir is None
    with caplog.at_level("WARNING"):
        FinetuneConfig(output_dir=str(tmp_path), schedule="joint", source_max_steps=10)
    assert "--source_max_steps 10 is ignored with --schedule joint" in caplog.text


def test_percent_signs_in_help_do_not_crash(tmp_path):
    from dataclasses import dataclass, field

    from crossner_hf.arguments import CrossNERParser

    @dataclass
    class Args:
        p: float = field(default=0.15, metadata={"help": "masking 15% of tokens"})

    assert "15% of tokens" in CrossNERParser([Args]).format_help()


def test_report_takes_its_yaml_as_config_like_every_command(tmp_path):
    from crossner_hf.commands.report import make_parser

    cfg = tmp_path / "r.yaml"
    cfg.write_text("split: validation\nn_boot: 10\n")
    (args,) = make_parser().parse_args_and_config(["--model", "m", "--domain", "music", "--config", str(cfg)])
    assert (args.domain, args.split, args.n_boot) == ("music", "validation", 10)
    with pytest.raises(ValueError, match="--config_file"):  # 0.3.0 removed it (--config named a domain)
        make_parser().parse_args_and_config(["--model", "m", "--config_file", str(cfg)])


TRAINING_COMMANDS = ("train", "dapt", "nerbert", "bilstm-crf", "cdlm")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_flag_is_abbreviated(command):
    """A prefix never stands for a longer flag (``--max_steps`` must not mean ``--max_steps_per_epoch``)."""
    import importlib

    parser = importlib.import_module(f"crossner_hf.commands.{COMMANDS[command]}").make_parser()
    assert parser.allow_abbrev is False
    longest = max((s for a in parser._actions for s in a.option_strings if s.startswith("--")), key=len)
    with pytest.raises((SystemExit, ValueError)):  # argparse exits, or HfArgumentParser refuses the leftover
        parser.parse_args_and_config([longest[:-2], "1"])  # a strict prefix of a real flag is an error


@pytest.mark.parametrize("command", TRAINING_COMMANDS)
def test_every_training_recipe_takes_max_steps(command):
    import importlib

    parser = importlib.import_module(f"crossner_hf.commands.{COMMANDS[command]}").make_parser()
    assert "--max_steps" in {s for a in parser._actions for s in a.option_strings}


def test_listing_commands_imports_none_of_them():
    """`crossner-hf --help` starts fast: it imports no command module, no transformers and no torch."""
    from crossner_hf.cli import SUMMARIES

    assert set(SUMMARIES) == set(COMMANDS)
    code = ("import sys\nfrom crossner_hf.cli import main\nmain(['--help'])\n"
            "heavy = sorted(m for m in sys.modules if m.startswith(('crossner_hf.commands', 'transformers', 'torch')))\n"
            "print('HEAVY', heavy)")
    res = _run([sys.executable, "-c", code])
    assert res.returncode == 0 and "HEAVY []" in res.stdout, res.stdout[-500:] + res.stderr[-500:]
    assert all(name in res.stdout for name in COMMANDS)


def test_predict_help_does_not_import_torch():
    code = ("import sys\nfrom crossner_hf.cli import main\ntry:\n    main(['predict', '--help'])\n"
            "except SystemExit:\n    pass\nprint('TORCH', 'torch' in sys.modules)")
    res = _run([sys.executable, "-c", code])
    assert "TORCH False" in res.stdout, res.stdout[-500:] + res.stderr[-500:]


def test_a_missing_extra_is_one_line_naming_the_pip_command(tmp_path):
    """With datatrove hidden, the Wikipedia builder says which extra to install, in one line, exit 2."""
    code = ("import sys\nsys.modules['datatrove'] = None\nfrom crossner_hf.cli import main\n"
            "sys.exit(main(['build-nerbert-corpus', '--dump', 'd.xml', '--ontology', 'o.owl', '--instance_types', "
            f"'t.nt', '--output_dir', {str(tmp_path / 'out')!r}]))")
    res = _run([sys.executable, "-c", code])
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stderr.strip().count("\n") == 0 and 'pip install "crossner_hf[wikipedia]"' in res.stderr


def test_a_command_process_ends_as_the_interpreter_would_less_the_teardown(tmp_path):
    """``exit_process`` (the end of ``crossner-hf``) skips only the modules' teardown: the exit code,
    non-daemon threads, idle ``concurrent.futures`` workers, ``atexit`` handlers, ``weakref.finalize`` cleanups and
    unflushed output all come out as from ``sys.exit``."""
    script = tmp_path / "ends.py"
    script.write_text(f"""
import atexit, concurrent.futures, sys, tempfile, threading, time
from pathlib import Path
from crossner_hf.cli import exit_process

out = Path({str(tmp_path)!r})
atexit.register(lambda: (out / "atexit").write_text("ran"))
temporary = tempfile.TemporaryDirectory(dir=out)  # removed by its weakref.finalize at exit
(out / "temporary").write_text(temporary.name)
pool = concurrent.futures.ThreadPoolExecutor(1)
pool.submit(int).result()  # an idle worker, never shut down: the exit must not wait on it forever
def late():
    time.sleep(0.5)  # still working when exit_process is called: it must be joined, not killed
    (out / "thread").write_text("finished")
threading.Thread(target=late).start()
sys.stdout.write("no newline, still buffered")
import ctypes
ctypes.CDLL(None).printf(b" and C's own")  # libc's buffer, which exit() would flush
exit_process(3)
""")
    # buffered for real: PYTHONUNBUFFERED would write the line at once, and the flush would go untested
    buffered = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=buffered)
    assert res.returncode == 3, res.stderr
    assert res.stdout == "no newline, still buffered and C's own"
    assert (tmp_path / "atexit").read_text() == "ran" and (tmp_path / "thread").read_text() == "finished"
    assert not Path((tmp_path / "temporary").read_text()).exists()
    # the program's own ends: a usage error is argparse's exit 2, --help 0, through the console script's `run`
    usage = _run([sys.executable, "-m", "crossner_hf.cli", "nonsense"])
    assert usage.returncode == 2 and "unknown command 'nonsense'" in usage.stderr
    assert _run([sys.executable, "-m", "crossner_hf.cli", "--help"]).returncode == 0
