"""What every workflow gives back and writes: one result base, one versioned ``results.json`` schema, one reader; the
figures as text; and a run's recorded predictions (each seed's ``predictions.jsonl``, :func:`read_predictions`).

Every runner (``finetune``, ``dapt``, ``pretrain_nerbert``, ``train_bilstm_crf``, ``train_cdlm``,
``train_multicell``, ``adapt``, ``compare``) returns a subclass of :class:`WorkflowResult` and writes a results
file (:data:`RESULT_FILES`) whose top level is the envelope, :data:`SCHEMA` and the :data:`SHARED_KEYS`:

- ``schema``: ``"crossner_hf.results/2"``; ``workflow``: ``finetune``, ``dapt``, ``nerbert``, ``rnn``, ``adapt``
  or ``compare``;
- ``model``: what was trained: the pretrained start the run was given (a name or folder), or for the RNN
  workflows, which start from scratch, the architecture (``bilstm-crf``, ``coach``, ``cdlm``, ``multicell``);
- ``dataset``: ``{"name": ..., ...}`` (a DAPT or NER-BERT run: its corpus);
- ``seeds``: the seeds run; ``seconds``: the wall time of the whole run;
- ``dev`` / ``test``: ``{"overall_f1": ..., ...}`` (F1, precision and recall are fractions, 0..1, in every file
  and object; the mean over seeds where there are several), or ``None`` where the workflow does not score that
  split (NER-BERT has no test split; DAPT's ``dev`` is the held-out masked-LM ``loss`` and ``perplexity``).

Beside the envelope is one body: the workflow's own keys, none of which repeats the envelope (0.3.0 dropped the
0.1 keys that did, :data:`DUPLICATES`). :func:`read_results` reads a folder's file, this schema, ``results/1``
(the envelope beside the 0.1 body) or the four 0.1 layouts (``train``'s ``config`` + ``domain``; the RNN recipes'
``args`` with ``domain``; DAPT's and NER-BERT's ``corpus``), and gives the same :class:`WorkflowResult`, in this
schema's shape.

Example:
    >>> r = WorkflowResult("out", {"schema": SCHEMA, "workflow": "rnn", "model": "bilstm-crf",
    ...                            "dataset": {"name": "music"}, "seeds": [1], "dev": {"overall_f1": 0.5},
    ...                            "test": {"overall_f1": 0.25}, "seconds": 3.0})
    >>> print(r)
    WorkflowResult(rnn bilstm-crf on music: dev F1 50.00, test F1 25.00, out)
    >>> r["seeds"], r.test_f1
    ([1], 0.25)
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

logger = logging.getLogger(__name__)

SCHEMA = "crossner_hf.results/2"
"""The version of the ``results.json`` layout; a reader of a later one refuses it in one line."""

OLDER_SCHEMAS = ("crossner_hf.results/1",)
"""Versions this one reads (``results/1``: the envelope, with the 0.1 body beside it)."""

SHARED_KEYS = ("schema", "workflow", "model", "dataset", "seeds", "dev", "test", "seconds")
"""The top-level keys every workflow's results file carries."""

RESULT_FILES = ("results.json", "adapt.json", "compare.json")
"""The results file of a finished folder, one name per kind: a run's (every training workflow's, DAPT's included:
the envelope's ``workflow`` says which), an ``adapt`` search's or a ``compare`` table's."""

OLDER_RESULT_FILES: dict[str, tuple[str, ...]] = {"results.json": ("dapt_results.json",)}
"""The names versions before 0.3 gave a results file (DAPT wrote ``dapt_results.json``): a folder holding one still
reads, and a grid cell holding one is done (:meth:`crossner_hf.grid.cells.Cell.result_path`)."""

READ_RESULT_FILES = (*RESULT_FILES, *(old for names in OLDER_RESULT_FILES.values() for old in names))
"""Every name :func:`read_results` looks for, this version's first."""

DUPLICATES: dict[str, tuple[str, ...]] = {
    "finetune": ("domain", "model_name_or_path", "test_overall_f1_mean", "test_overall_f1_std", "dev_overall_f1_mean",
                 "dev_overall_f1_std", "total_seconds"),
    "rnn": ("best_dev_f1", "best_epoch", "total_seconds"),
    "nerbert": ("kind", "model_name_or_path"),
    "dapt": ("model_name_or_path", "corpus", "corpus_level", "eval_loss", "perplexity"),
}
"""The 0.1 keys an older file carries beside the envelope that holds the same values (``test_overall_f1_mean`` is
``test.overall_f1``, ``domain`` is ``dataset.name``, ...): :func:`upgrade` drops them, so an old file reads in this
schema's shape."""


def shared_record(workflow: str, *, model: Any, dataset: Mapping[str, Any] | str | None, seeds: list[int],
                  dev: Mapping[str, Any] | None, test: Mapping[str, Any] | None, seconds: float) -> dict[str, Any]:
    """The :data:`SHARED_KEYS` of a results file, to be merged at its top level (``{**shared_record(...), ...}``)."""
    if isinstance(dataset, str) or dataset is None:
        dataset = {"name": dataset}
    return {"schema": SCHEMA, "workflow": workflow, "model": None if model is None else str(model),
            "dataset": dict(dataset), "seeds": [int(s) for s in seeds], "dev": None if dev is None else dict(dev),
            "test": None if test is None else dict(test), "seconds": seconds}


def upgrade(results: dict[str, Any], where: str = "results") -> dict[str, Any]:
    """``results`` in this schema's shape: a file of this schema as it is; one of an older schema, or of the four
    0.1 layouts (written before the schema, the envelope read off what they hold), without its :data:`DUPLICATES`."""
    schema = results.get("schema")
    if schema == SCHEMA:
        return results
    if schema in OLDER_SCHEMAS:
        shared = {key: results.get(key) for key in SHARED_KEYS}
    elif schema is not None:
        raise ValueError(f"{where}: results schema {schema!r} is newer than this crossner_hf reads ({SCHEMA}); "
                         "upgrade crossner_hf to read it.")
    elif "test_overall_f1_mean" in results:  # `train` (finetune), 0.1: config + domain
        means = (results.get("test_mean") or {}).get(results.get("decoding")) or {}
        shared = shared_record(
            "finetune", model=results.get("model_name_or_path"),
            dataset=results.get("dataset") if isinstance(results.get("dataset"), dict) else results.get("domain"),
            seeds=results.get("seeds", []), seconds=results.get("total_seconds", 0.0),
            dev={"overall_f1": results.get("dev_overall_f1_mean"), "overall_f1_std": results.get("dev_overall_f1_std")},
            test={"overall_f1": results["test_overall_f1_mean"], "overall_f1_std": results.get("test_overall_f1_std"),
                  **{f"overall_{m}": means[m] for m in ("precision", "recall") if m in means}})
    elif "args" in results or isinstance(results.get("test"), dict):  # the RNN recipes, 0.1: args + domain, test
        args = results.get("args") or {}
        dataset = results.get("dataset") if isinstance(results.get("dataset"), dict) else args.get("domain")
        shared = shared_record(
            "rnn", model=results.get("model"), dataset=dataset, seeds=[args["seed"]] if "seed" in args else [],
            dev={"overall_f1": results.get("best_dev_f1"), "epoch": results.get("best_epoch")},
            test=results.get("test"), seconds=results.get("total_seconds", 0.0))
    elif results.get("kind") == "nerbert":  # NER-BERT pre-training: corpus, best_validation
        corpus = results.get("corpus") or {}
        best = results.get("best_validation") or {}
        shared = shared_record(
            "nerbert", model=results.get("model_name_or_path"),
            dataset={"name": corpus.get("path"), "config": corpus.get("config")}, seeds=[],
            dev={"overall_f1": best.get("f1"), "step": best.get("step")}, test=None,
            seconds=results.get("seconds", 0.0))
    elif "corpus" in results:  # DAPT: corpus, corpus_level
        shared = shared_record(
            "dapt", model=results.get("model_name_or_path"),
            dataset={"name": results["corpus"], "level": results.get("corpus_level")}, seeds=[],
            dev={"loss": results["eval_loss"], "perplexity": results.get("perplexity")} if "eval_loss" in results
            else None, test=None, seconds=results.get("seconds", 0.0))
    else:
        raise ValueError(f"{where}: not a crossner_hf results file (no 'schema', 'test_overall_f1_mean', 'args' "
                         "or 'corpus' key); pass the folder a crossner_hf run wrote.")
    # the envelope first, then the body without what the envelope holds (an old RNN file's `test` and `dataset`
    # are what the shared keys were read from)
    dropped = set(shared) | set(DUPLICATES.get(shared["workflow"], ()))
    body = {k: v for k, v in results.items() if k not in dropped}
    if shared["workflow"] == "rnn" and isinstance(body.get("args"), dict):  # 0.1's args.domain: dataset.name
        body["args"] = {k: v for k, v in body["args"].items() if k != "domain"}
    return {**shared, "schema": SCHEMA, **body}


def results_file(folder: str | Path) -> Path:
    """The results file of ``folder`` (or ``folder`` itself when it is a file)."""
    path = Path(folder)
    if path.is_file():
        return path
    for name in READ_RESULT_FILES:
        if (path / name).is_file():
            return path / name
    raise FileNotFoundError(f"{path}: no {' or '.join(READ_RESULT_FILES)}; pass the output folder of a finished "
                            "crossner_hf run (a folder with a README.md).")


@dataclass(frozen=True, repr=False)
class WorkflowResult:
    """What a run gives back: its folder and its results file's content, in the shared schema.

    ``dev_f1`` / ``test_f1`` are fractions (the mean over seeds where there are several), ``None`` where the
    workflow does not score that split. ``result["key"]`` and ``"key" in result`` read ``results``.
    """

    output_dir: Path
    results: dict[str, Any]

    workflow: ClassVar[str | None] = None
    """The ``workflow`` value of the subclass's results (``None``: any)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "output_dir", Path(self.output_dir))
        object.__setattr__(self, "results", upgrade(dict(self.results), str(self.output_dir)))

    @classmethod
    def read(cls, folder: str | Path) -> "WorkflowResult":
        """The result a finished run left in ``folder`` (any schema this version reads)."""
        from crossner_hf.outputs import read_json

        path = results_file(folder)
        raw = read_json(path, "rerun the workflow that wrote it")
        if not isinstance(raw, dict):
            raise ValueError(f"{path}: not a results record (a JSON object); rerun the workflow that wrote it.")
        result = cls(path.parent, upgrade(raw, str(path)))
        if cls.workflow is not None and result.results["workflow"] != cls.workflow:
            raise ValueError(f"{path}: a {result.results['workflow']} run's results, not {cls.workflow}; read it "
                             "with read_results.")
        return result

    # ------------------------------------------------------------------ the shared keys

    @property
    def dataset(self) -> str | None:
        """The dataset's (a DAPT or NER-BERT run: the corpus's) name."""
        return (self.results.get("dataset") or {}).get("name")

    @property
    def model(self) -> str | None:
        return self.results.get("model")

    @property
    def seeds(self) -> list[int]:
        return list(self.results.get("seeds") or [])

    @property
    def seconds(self) -> float:
        return self.results.get("seconds", 0.0)

    @property
    def dev_f1(self) -> float | None:
        return (self.results.get("dev") or {}).get("overall_f1")

    @property
    def test_f1(self) -> float | None:
        return (self.results.get("test") or {}).get("overall_f1")

    # ------------------------------------------------------------------ dict access and a summary

    def __getitem__(self, key: str) -> Any:
        return self.results[key]

    def __contains__(self, key: object) -> bool:
        return key in self.results

    def get(self, key: str, default: Any = None) -> Any:
        return self.results.get(key, default)

    def __str__(self) -> str:
        scores = [f"{name} F1 {100 * value:.2f}" for name, value in (("dev", self.dev_f1), ("test", self.test_f1))
                  if value is not None]
        what = " ".join(str(x) for x in (self.results.get("workflow"), self.model) if x)
        on = f" on {self.dataset}" if self.dataset else ""
        return f"{type(self).__name__}({what}{on}: {', '.join([*scores, str(self.output_dir)])})"

    __repr__ = __str__


def read_results(folder: str | Path) -> WorkflowResult:
    """The result a finished run left in ``folder`` (the first of :data:`READ_RESULT_FILES` it holds: ``results.json``,
    ``adapt.json``, ``compare.json``, a DAPT folder of a version before 0.3's ``dapt_results.json``; of this schema
    or an older one), with the shared keys;
    the workflow's own keys through ``result["key"]``."""
    return WorkflowResult.read(folder)


# --------------------------------------------------------------------------- the figures as text


def percent_text(value: float | None) -> str:
    """A fraction as percent with 2 decimals (``"–"`` for none): every table and card prints F1 so."""
    return "–" if value is None else f"{100 * value:.2f}"


def mean_std_text(mean: float, std: float | None) -> str:
    """``"63.73 ± 0.84"``; just ``"64.68"`` for one seed (no spread to report)."""
    return percent_text(mean) if std is None else f"{percent_text(mean)} ± {percent_text(std)}"


def format_per_type_table(metrics: dict[str, Any], *, strict: bool = False) -> str:
    """A plain-text table of per-type precision/recall/F1 (percent, 2 decimals) and support: a scored split of a
    results file (``per_seed[i]["test"]``) or ``compute_ner_metrics``' dict.

    Rows are sorted by type name and followed by an ``overall`` (micro) row whose support
    is the total number of gold entities. ``strict=True`` tabulates the strict IOB2 figures.

    Example:
        >>> m = {"per_type": {"person": {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}},
        ...      "overall_precision": 1.0, "overall_recall": 1.0, "overall_f1": 1.0}
        >>> print(format_per_type_table(m))
        type     precision  recall      f1  support
        person      100.00  100.00  100.00        1
        overall     100.00  100.00  100.00        1
    """
    prefix = "strict_" if strict else ""
    try:
        per_type = metrics[f"{prefix}per_type"]
        overall = [metrics[f"{prefix}overall_{k}"] for k in ("precision", "recall", "f1")]
    except KeyError as err:
        raise ValueError(
            f"metrics lacks the key {err.args[0]!r}; pass the dict returned by "
            "crossner_hf.evaluation.metrics.compute_ner_metrics."
        ) from None
    rows = [
        (t, per_type[t]["precision"], per_type[t]["recall"], per_type[t]["f1"], per_type[t]["support"])
        for t in sorted(per_type)
    ]
    rows.append(("overall", *overall, sum(v["support"] for v in per_type.values())))
    width = max(len("overall"), *(len(r[0]) for r in rows))
    header = f"{'type':<{width}}  {'precision':>9}  {'recall':>6}  {'f1':>6}  {'support':>7}"
    lines = [header]
    for name, p, r, f, s in rows:
        lines.append(f"{name:<{width}}  {p * 100:>9.2f}  {r * 100:>6.2f}  {f * 100:>6.2f}  {s:>7d}")
    return "\n".join(lines)


def format_results(results: dict[str, Any]) -> str:
    """A fine-tuning run's figures as ``train`` prints them: the per-type test table of the kept seed, then per-seed
    and mean ± std F1 (percent)."""
    best = next(r for r in results["per_seed"] if r["seed"] == results["best_seed"])
    lines = [
        f"CrossNER {results['dataset']['name']} / {results['schedule']} / {results['model']}",
        f"Test, per type (seed {best['seed']}, best-dev checkpoint):",
        format_per_type_table(best["test"]),
        "",
        f"{'seed':>6}  {'dev F1':>7}  {'test F1':>7}  {'best step':>9}  {'train s':>8}",
    ]
    for r in results["per_seed"]:
        lines.append(
            f"{r['seed']:>6}  {100 * r['dev']['overall_f1']:>7.2f}  {100 * r['test']['overall_f1']:>7.2f}  "
            f"{str(r['best_dev_step']):>9}  {r['train_seconds']:>8.0f}"
        )
    lines.append(
        f"test F1 ({results['decoding']} decoding) over {len(results['seeds'])} seed(s): "
        f"{mean_std_text(results['test']['overall_f1'], results['test']['overall_f1_std'])}"
    )
    return "\n".join(lines)


# --------------------------------------------------------------------------- a run's recorded predictions
# train writes seed-<seed>/predictions.jsonl in the pass that gives the seed's figures, one line per split:
#     {"split": "validation", "labels": ["O", "B-x", ...], "sentences": 30, "tokens_sha256": "...",
#      "tags": [[0, 0, 1, ...], ...]}
# (tag ids into labels, the model head's tags). A reader of the run (adapt's paired bootstrap on dev, the shipped
# model's dev and test figures) takes the predictions from here instead of loading the model and tagging the split
# again: the tags are the ones the run scored, so the figures are the same to the digit. tokens_sha256 is the split's
# words: predictions recorded on other data (a compare given another target) are never read as this data's, and the
# reader tags instead (read_predictions returns None).

PREDICTIONS = "predictions.jsonl"
"""The file a seed's folder holds its dev and test predictions in."""


def tokens_fingerprint(tokens: Sequence[Sequence[str]]) -> str:
    """sha256 of a split's words (which sentences, in which order): the data recorded predictions belong to."""
    text = json.dumps([[str(w) for w in sentence] for sentence in tokens], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_predictions(path: str | Path, labels: Sequence[str],
                      splits: Mapping[str, tuple[Sequence[Sequence[str]], Sequence[Sequence[int]]]]) -> Path:
    """Write ``{split: (its words, the predicted tag ids)}`` to ``path`` (replaced whole, never half-written).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / PREDICTIONS
    >>> _ = write_predictions(path, ["O", "B-x"], {"test": ([["a", "b"]], [[1, 0]])})
    >>> read_predictions(path, "test", [["a", "b"]]), read_predictions(path, "test", [["a", "c"]])
    ([['B-x', 'O']], None)
    """
    from crossner_hf.outputs import atomic_output

    lines = []
    for split, (tokens, tags) in splits.items():
        if len(tokens) != len(tags):
            raise ValueError(f"{path}: {len(tags)} predicted sentences for the {len(tokens)} of {split}.")
        lines.append(json.dumps({"split": split, "labels": list(labels), "sentences": len(tokens),
                                 "tokens_sha256": tokens_fingerprint(tokens),
                                 "tags": [[int(t) for t in sentence] for sentence in tags]}))
    path = Path(path)
    with atomic_output(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def read_predictions(path: str | Path, split: str, tokens: Sequence[Sequence[str]]) -> list[list[str]] | None:
    """The tags recorded in ``path`` for ``split`` of the data whose words are ``tokens``, or None: no file (a run
    made before runs recorded them), no such split, or predictions of other data."""
    path = Path(path)
    if not path.is_file():
        return None
    fingerprint = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            logger.warning("%s: unreadable line (%s); the model tags %s instead", path, err, split)
            return None
        if record.get("split") != split:
            continue
        fingerprint = fingerprint or tokens_fingerprint(tokens)
        if record.get("tokens_sha256") != fingerprint:
            logger.info("%s: its %s predictions are of other sentences than these; the model tags them instead",
                        path, split)
            return None
        names = record["labels"]
        tags = [[names[t] for t in sentence] for sentence in record["tags"]]
        if [len(t) for t in tags] != [len(s) for s in tokens]:  # the words matched: a tag a word, or not ours
            logger.warning("%s: its %s predictions do not give one tag a word; the model tags them instead", path,
                           split)
            return None
        return tags
    return None
