"""The paper presets resolve to what docs/fidelity.md says the papers did: one table drives both.

Every ``preset[,preset...].flag = value`` in the ledger's last column is checked against the
arguments the preset's own command parser produces from ``--config`` (so the command's
``__post_init__`` resolution counts), and every key of every preset must be named by a cell.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import yaml

from crossner_hf.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
PRESETS = ROOT / "trainer_recipes" / "configs" / "paper"
LEDGER = ROOT / "docs" / "fidelity.md"
# flags a command requires that a paper preset cannot know (the user's files)
REQUIRED = {"build-nerbert-corpus": ["--dump", "d.xml", "--ontology", "o.owl", "--instance_types", "t.ttl",
                                     "--output_dir", "out"],
            "dapt": ["--train_file", "corpus.txt", "--output_dir", "out"], "nerbert": ["--dataset_name", "corpus"],
            "train": ["--domain", "politics"]}
_CHECK = re.compile(r"^([a-z0-9_,]+)\.([a-z0-9_]+) = (.+)$")


def _value(text: str):
    value = yaml.safe_load(text)
    if isinstance(value, str):  # YAML reads 5e-5 (no dot) as a string
        try:
            return float(value)
        except ValueError:
            return value
    return value


CITATION = re.compile(r"\b00[0-4]:\d+|\b000@\d+")
RELEASE_FILE = re.compile(r"`[\w./-]+\.(py|config|sh|md)(:[\d-]+)?`|`[\w-]+/[\w./-]*`")


def ledger_rows() -> list[tuple[str, list[str]]]:
    """(section, cells) of every row of the ledger's tables (those whose last column is "preset")."""
    rows, section, in_table = [], "", False
    for line in LEDGER.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            section = line[3:]
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| item"):
            in_table = cells[-1] == "preset"
            continue
        if in_table and not line.startswith("|---"):
            rows.append((section, cells))
    return rows


def cited(cells: list[str]) -> bool:
    """A row cites the paper (FILE:line, 000@offset) or, where the paper is silent, names the release's file."""
    paper, release = cells[1], cells[2]
    return bool(CITATION.search(paper)) or (paper.startswith("— (silent") and bool(RELEASE_FILE.search(release)))


def test_every_ledger_row_cites_the_paper_or_the_release():
    rows = ledger_rows()
    assert len(rows) > 60 and {s for s, _ in rows} == {"CrossNER (Liu et al., AAAI 2021)", "NER-BERT (Liu et al., 2021)",
                                                       "Cross-domain LM, CDLM (Jia, Liang & Zhang, ACL 2019)"}
    missing = [cells[0] for _, cells in rows if not cited(cells)]
    assert not missing, f"docs/fidelity.md rows without a citation (FILE:line or the release's file): {missing}"
    assert {cells[4] for _, cells in rows} <= {"exact", "documented choice", "gap"}
    # the check can fail: a row that only says "the paper says so"
    assert not cited(["optimiser", "Adam, as the paper says", "not released", "Adam", "exact", ""])
    assert not cited(["optimiser", "— (silent)", "the release's defaults", "Adam", "exact", ""])


def test_every_cited_line_exists_in_the_papers():
    papers = ROOT.parent / "shared" / "papers"
    if not papers.is_dir():
        pytest.skip("needs ../shared/papers")
    lengths = {p.name[:3]: p.read_text(encoding="utf-8") for p in papers.glob("00?_*.txt")}
    for _, cells in ledger_rows():
        for ref in re.findall(r"\b(00[0-4])([:@])(\d+)", cells[1]):
            text = lengths[ref[0]]
            limit = len(text) if ref[1] == "@" else text.count("\n") + 1
            assert 0 < int(ref[2]) <= limit, (cells[0], ref)


def ledger_checks() -> list[tuple[str, str, object]]:
    """(preset, flag, value) for every check in the ledger's tables."""
    checks = []
    in_ledger_table = False  # only the tables whose last column is "preset" (not the measured-effects table)
    for line in LEDGER.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            in_ledger_table = False
            continue
        cell = line.rstrip().rstrip("|").rsplit("|", 1)[-1].strip()
        if line.startswith("| item"):
            in_ledger_table = cell == "preset"
            continue
        if line.startswith("|---") or not in_ledger_table:
            continue
        for item in filter(None, (part.strip() for part in cell.split(";"))):
            match = _CHECK.match(item)
            assert match, f"docs/fidelity.md: cannot read the preset check {item!r} (write preset.flag = value)"
            presets, flag, value = match.groups()
            checks += [(preset, flag, _value(value)) for preset in presets.split(",")]
    return checks


def preset_command(path: Path) -> str:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# command: "), f"{path.name}: the first line names the command (# command: NAME)"
    return first.removeprefix("# command: ").strip()


def resolve(path: Path):
    command = preset_command(path)
    parser = importlib.import_module(f"crossner_hf.commands.{COMMANDS[command]}").make_parser()
    (args,) = parser.parse_args_and_config([parser.yaml_flag, str(path), *REQUIRED.get(command, [])])
    return args


def _same(a, b) -> bool:
    if isinstance(b, (int, float)) and not isinstance(b, bool) and isinstance(a, (int, float)):
        return abs(float(a) - float(b)) <= 1e-12 * max(1.0, abs(float(b)))
    if isinstance(b, list) and isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return str(getattr(a, "value", a)) == str(b)  # enums (lr_scheduler_type) compare by value


ALL = sorted(PRESETS.glob("*.yaml"))


def test_there_is_a_preset_for_every_paper_setting():
    assert {p.stem for p in ALL} >= {
        "crossner_direct", "crossner_pretrain_finetune", "crossner_joint", "crossner_dapt", "crossner_bilstm_crf",
        "nerbert_corpus", "nerbert_pretrain", "nerbert_finetune", "cdlm_supervised", "cdlm_zero_shot",
        "cdlm_bilstm_crf"}


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.stem)
def test_preset_resolves_to_the_ledger(path):
    args = resolve(path)
    checks = [(flag, value) for preset, flag, value in ledger_checks() if preset == path.stem]
    assert checks, f"docs/fidelity.md names no check of {path.stem}"
    for flag, value in checks:
        assert _same(getattr(args, flag), value), f"{path.stem}.{flag}: resolves to {getattr(args, flag)!r}, " \
                                                   f"the ledger says {value!r}"
    named = {flag for flag, _ in checks}
    keys = set(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert keys <= named, f"{path.stem}: keys {sorted(keys - named)} are not in docs/fidelity.md"


def test_every_ledger_check_names_a_preset():
    names = {p.stem for p in ALL}
    assert {preset for preset, _, _ in ledger_checks()} <= names


def test_a_drifted_preset_is_caught(tmp_path):
    """The check can fail: a preset whose learning rate differs from the ledger's."""
    text = (PRESETS / "crossner_joint.yaml").read_text().replace("learning_rate: 1.0e-5", "learning_rate: 5.0e-5")
    drifted = tmp_path / "crossner_joint.yaml"
    drifted.write_text(text)
    args = resolve(drifted)
    value = next(v for p, f, v in ledger_checks() if p == "crossner_joint" and f == "learning_rate")
    assert not _same(args.learning_rate, value)
