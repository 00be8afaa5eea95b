"""Shared fixtures: the shared CrossNER files and tiny offline BERTs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# the parsed-CrossNER cache of the whole run (.ci/test makes one too): never the user's ~/.cache, and the splits are
# parsed once a run, not once a test (its keys hold the files' bytes, so a test's own edited copy gets its own entry)
os.environ.setdefault("CROSSNER_HF_CACHE", tempfile.mkdtemp(prefix="crossner-hf-test-cache-"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CROSSNER_SHARED_DIR", ROOT.parent / "shared"))


def pytest_configure(config):
    """The known incompatibility, said before any worker starts (a worker's own error reaches the terminal only
    as an INTERNALERROR naming its first test)."""
    from importlib.metadata import version

    from packaging.version import Version

    if (config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput")
            and Version(pytest.__version__) >= Version("9.2") and Version(version("pytest-xdist")) <= Version("3.8")):
        raise pytest.UsageError(f"pytest {pytest.__version__} with pytest-xdist {version('pytest-xdist')} ignores "
                                "xdist_group (--dist loadgroup): install the dev extra's pins (pip install -e .[dev]).")


@pytest.hookimpl(trylast=True)  # after pytest-xdist has added each test's group to its node id
def pytest_collection_modifyitems(config, items):
    """Longest first, so that two workers (``pytest -n 2``, as ``.ci/test`` runs) end together: the README's
    commands, then the tests marked slow, then the rest in file order (a stable sort keeps it).

    Under ``--dist loadgroup`` every test marked ``xdist_group`` must carry its group in its node id
    (``@name``): otherwise the groups are silently ignored (pytest 9.2 with pytest-xdist 3.8) and the
    Ray tests start two clusters at once; the run stops with the reason instead."""

    groups = {item: (m.args[0] if m.args else m.kwargs.get("name")) if (m := item.get_closest_marker("xdist_group"))
              else None for item in items}
    lost = [item.nodeid for item, g in groups.items() if g is not None and "@" not in item.nodeid]
    if lost and getattr(config.option, "loadgroup", False):  # set on xdist workers only
        raise pytest.UsageError(f"pytest-xdist did not group {lost[0]} (and {len(lost) - 1} more): this pytest and "
                                "pytest-xdist do not work together; install the versions setup.cfg's dev extra pins.")

    def rank(item) -> int:
        if item.nodeid.startswith("tests/test_readme.py::test_readme_commands_run"):
            return 0
        return 1 if item.get_closest_marker("slow") else 2

    # an xdist group (one worker's) keeps the rank of its first member, so its tests stay together and a
    # module-scoped fixture they share is built once
    first: dict[str, int] = {}
    for item, g in groups.items():
        if g is not None:
            first[g] = min(first.get(g, 2), rank(item))
    items.sort(key=lambda item: rank(item) if groups[item] is None else first[groups[item]])


_FROZEN = [0]  # how many modules were loaded at the last gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """Once a test has loaded many new modules (torch, transformers, ray ...), move what is alive into the garbage
    collector's permanent generation (``gc.freeze``).

    The ``Trainer`` runs a full collection at each training's end (accelerate's ``free_memory``); in a test worker
    that has imported the libraries of the whole suite it walked millions of objects, half a second each time, for
    each of the suite's trainings. A fresh ``crossner-hf`` process, what users run, holds far fewer. What is frozen
    is never collected: modules live as long as the worker anyway; a module-scoped fixture's objects alive at that
    moment stay until the worker exits."""
    import gc
    import sys

    if len(sys.modules) > _FROZEN[0] + 200:
        gc.collect()
        gc.freeze()
        _FROZEN[0] = len(sys.modules)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"Shared data folder {SHARED} not found; set CROSSNER_SHARED_DIR.")
    return SHARED


@pytest.fixture(scope="session")
def crossner_data_dir(shared_dir: Path) -> Path:
    """``../shared/data/crossner``: the six CrossNER configs, read-only."""
    return shared_dir / "data" / "crossner"


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory, crossner_data_dir: Path) -> str:
    """A random 2-layer, 32-hidden BERT with a WordPiece vocab of the politics words (every split's: a word left out
    would be cut into characters, and dev / test sentences twice as many tokens make every evaluation of the suite
    slower for nothing)."""
    from crossner_hf.testing import make_tiny_bert

    words: set[str] = set()
    for split in ("train", "dev", "test"):
        for line in (crossner_data_dir / "politics" / f"{split}.txt").read_text(encoding="utf-8").splitlines():
            if line.strip():
                words.add(line.split("\t")[0].lower())
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"), sorted(words))


@pytest.fixture(scope="session")
def wiki(shared_dir: Path) -> dict[str, Path]:
    """The shared Wikipedia dump samples, DBpedia files and NLTK data."""
    data = shared_dir / "data"
    return {"sample": data / "wikipedia" / "enwiki-sample-pages-articles.xml.bz2",
            "tiny": data / "wikipedia" / "enwiki-tiny-3pages.xml.bz2",
            "owl": data / "dbpedia" / "dbpedia_2016-10.owl",
            "types": data / "dbpedia" / "instance_types_en_wiki_subset.nt",
            "nltk": data / "nltk_data"}


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory, wiki, worker_id) -> Path:
    """The NER-BERT corpus builder on the whole sample dump (one task), as a user runs it; built once per run:
    under xdist the first worker builds it in the run's shared temporary folder and the other reads it
    (pytest-xdist's recipe for session data). Tests only read it."""
    from filelock import FileLock
    from wiki_builder import build_script, run_builder

    def build(tmp: Path) -> Path:
        out = tmp / "out"
        proc = run_builder(tmp, "build", build_script(out, wiki["sample"], wiki))
        assert proc.wait(timeout=600) == 0, (tmp / "build.log").read_text()[-3000:]
        return out

    if worker_id == "master":  # no xdist: this run's own folder
        return build(tmp_path_factory.mktemp("corpus"))
    shared = tmp_path_factory.getbasetemp().parent / "sample-corpus"  # the run's folder, above each worker's
    with FileLock(str(shared) + ".lock"):
        if not (shared / "built").is_file():
            shared.mkdir(exist_ok=True)
            build(shared)
            (shared / "built").touch()
    return shared / "out"


@pytest.fixture()
def fake_hub(monkeypatch):
    """A fake Hub upload API on 127.0.0.1 (tests/hub_server.py), with HF_ENDPOINT and HF_TOKEN set.

    Xet is disabled so uploads take the Git LFS path the fake implements.
    """
    from huggingface_hub import constants
    from hub_server import FakeHub

    hub = FakeHub().start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", hub.token)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setattr(constants, "ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the suite runs offline; pushing to this server is allowed
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    try:
        yield hub
    finally:
        hub.stop()


UNINTERRUPTED = dict(domain="politics", few_shot=16, per_device_train_batch_size=4, num_train_epochs=4,
                     learning_rate=1e-3, seed=7)
"""The direct run that the train-resume tests (test_schedules, test_safety) kill and resume."""


@pytest.fixture(scope="session")
def uninterrupted_run(tmp_path_factory, tiny_bert_dir, crossner_data_dir, worker_id) -> dict:
    """``{"settings": UNINTERRUPTED, "results": seed 7's per_seed entry}`` of one uninterrupted run with those
    settings on the tiny BERT: each resume test kills and resumes a run with the same settings and compares it
    with these results. Trained once per run, as sample_corpus is (the tests each trained this identical run
    before). Tests only read it."""
    import json

    from filelock import FileLock

    def train(tmp: Path) -> Path:
        from crossner_hf.commands.train import run_train
        from command_inputs import train_args

        saved = os.environ.get("CROSSNER_HF_CACHE")
        os.environ["CROSSNER_HF_CACHE"] = str(tmp / "cache")  # a session fixture: no monkeypatch here
        try:
            results = run_train(*train_args(
                output_dir=str(tmp / "full"), model_name_or_path=tiny_bert_dir, data_dir=str(crossner_data_dir),
                disable_tqdm=True, use_cpu=True, dataloader_pin_memory=False, **UNINTERRUPTED)).results
        finally:
            if saved is None:
                os.environ.pop("CROSSNER_HF_CACHE", None)
            else:
                os.environ["CROSSNER_HF_CACHE"] = saved
        (tmp / "per_seed.json").write_text(json.dumps(results["per_seed"][0]))
        return tmp / "per_seed.json"

    if worker_id == "master":  # no xdist: this run's own folder
        return {"settings": UNINTERRUPTED, "results": json.loads(train(tmp_path_factory.mktemp("uninterrupted"))
                                                                   .read_text())}
    shared = tmp_path_factory.getbasetemp().parent / "uninterrupted-run"  # the run's folder, above each worker's
    with FileLock(str(shared) + ".lock"):
        if not (shared / "per_seed.json").is_file():
            shared.mkdir(exist_ok=True)
            train(shared)
    return {"settings": UNINTERRUPTED, "results": json.loads((shared / "per_seed.json").read_text())}
