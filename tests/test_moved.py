"""crossner_hf's top level holds what a user calls (at most 25 names); every name it held before, and every old
module path, still works through crossner_hf._moved with one FutureWarning naming the removal version."""

from __future__ import annotations

import importlib
import warnings

import pytest

import crossner_hf
from crossner_hf import _moved


def test_the_top_level_is_small_and_every_name_resolves():
    assert len(crossner_hf.__all__) <= 25, crossner_hf.__all__
    assert len(set(crossner_hf.__all__)) == len(crossner_hf.__all__)
    for name in crossner_hf.__all__:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a current name never warns
            assert getattr(crossner_hf, name) is not None
    assert not set(crossner_hf.__all__) & set(_moved.TOP_LEVEL)  # a name is current or old, never both
    assert sorted(dir(crossner_hf)) == sorted(crossner_hf.__all__)


@pytest.mark.parametrize("name", sorted(_moved.TOP_LEVEL))
def test_each_removed_top_level_name_warns_once_and_is_the_modules_object(name):
    module = _moved.TOP_LEVEL[name]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(crossner_hf, name)
    assert len(caught) == 1 and caught[0].category is FutureWarning, [str(w.message) for w in caught]
    message = str(caught[0].message)
    assert f"crossner_hf.{name} is deprecated" in message and "removed in crossner_hf 0.3.0" in message
    assert f"use {module}.{name}" in message
    assert value is getattr(importlib.import_module(module), name)


def test_old_executor_modules_are_the_one_executor_home():
    import crossner_hf.executors as executors

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for old in ("crossner_hf.reproduce.executors", "crossner_hf.wikipedia.executors"):
            assert importlib.import_module(old) is executors
    with warnings.catch_warnings(record=True) as renamed:
        warnings.simplefilter("always")
        assert executors.GridExecutorOptions is executors.ExecutorOptions
    assert len(renamed) == 1 and "0.3.0" in str(renamed[0].message)
    assert {"local", "ray", "slurm"} == set(executors.EXECUTORS)
    with pytest.raises(ValueError, match="--executor 'lsf': choose one of local, ray, slurm"):
        executors.ExecutorOptions(executor="lsf")


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'finetuning'"):
        crossner_hf.finetuning  # noqa: B018
