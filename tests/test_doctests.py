"""Every ``>>>`` example in the package's docstrings runs and prints what it shows.

Examples that need a model download, a GPU or minutes of work carry ``# doctest: +SKIP``; everything
else runs here (offline, with the shared data the other tests use).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import types

import pytest

import crossner_hf

SKIP_MODULES = {"crossner_hf.evaluation.seqeval_metric.seqeval_crossner"}
"""Loaded by ``evaluate`` from its path, not imported as a package module (its examples run in test_metrics)."""

MODULES = sorted(m.name for m in pkgutil.walk_packages(crossner_hf.__path__, "crossner_hf.")
                 if m.name not in SKIP_MODULES)


def run_doctests(module: types.ModuleType) -> tuple[int, int, list[str]]:
    """(examples attempted, failed, the failing docstrings' names) for one module."""
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    attempted = failed = 0
    names = []
    for test in doctest.DocTestFinder().find(module, module.__name__):
        if test.examples:
            result = runner.run(test, out=lambda _: None)
            attempted += result.attempted
            failed += result.failed
            if result.failed:
                names.append(test.name)
    return attempted, failed, names


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch, tmp_path, crossner_data_dir):
    monkeypatch.setenv("CROSSNER_DATA_DIR", str(crossner_data_dir))
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    _, failed, names = run_doctests(importlib.import_module(name))
    assert failed == 0, f"docstring examples that fail in {name}: {names}"


def test_the_examples_are_found_and_a_wrong_one_fails():
    total = sum(run_doctests(importlib.import_module(name))[0] for name in
                ("crossner_hf.data.labels", "crossner_hf.data.masking", "crossner_hf.evaluation.metrics"))
    assert total >= 10
    wrong = types.ModuleType("wrong")
    wrong.__doc__ = ">>> 1 + 1\n3\n"
    assert run_doctests(wrong)[1] == 1
