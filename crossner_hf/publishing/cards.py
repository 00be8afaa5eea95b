"""Model and dataset cards the Hub understands, built with ``huggingface_hub``.

One code path: the YAML metadata comes from ``ModelCardData`` (with ``EvalResult`` entries,
which ``huggingface_hub`` turns into a ``model-index``) or ``DatasetCardData``
(:func:`crossner_hf.publishing.dataset_folder.write_hub_dataset_folder`); the Markdown bodies come from the
templates in ``model_cards/`` (``$name`` placeholders, shipped inside the wheel as
``crossner_hf.model_cards``).

``base_model`` is always a Hub id or absent: the packaged offline encoder is written as
``sentence-transformers/all-MiniLM-L6-v2``, a local folder's own card ``base_model`` is
followed (a DAPT output names the model it adapted), and an unknown local path is left
out rather than written as a path.
"""

from __future__ import annotations

from crossner_hf.citations import CITATIONS

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from crossner_hf.encoders import OFFLINE_ENCODER, resolve_model_path
from crossner_hf.data.labels import CONFIGS, labels_for
from crossner_hf.modeling.heads import read_provenance
from crossner_hf.results import format_per_type_table, mean_std_text, percent_text

OFFLINE_ENCODER_HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
KNOWN_LICENSES = {OFFLINE_ENCODER_HUB_ID: "apache-2.0", "bert-base-cased": "apache-2.0",
                  "google-bert/bert-base-cased": "apache-2.0", "bert-base-uncased": "apache-2.0",
                  "roberta-base": "mit", "FacebookAI/roberta-base": "mit"}
"""Licenses of base models whose cards cannot be read offline."""


METRIC_NAMES = {"precision": "precision", "recall": "recall", "f1": "F1"}

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")


# ---------------------------------------------------------------------------- templates


def citation(key: str) -> str:
    """The BibTeX entry ``key`` (crossner, nerbert, cdlm) as a fenced block: the one home of citations."""
    return "```bibtex\n" + CITATIONS[key] + "\n```"


def _environment():
    import jinja2

    folder = resources.files("crossner_hf.model_cards")  # package data (mapped from model_cards/ in setup.cfg)
    loader = jinja2.FunctionLoader(lambda name: folder.joinpath(name).read_text("utf-8"))
    env = jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False)  # Markdown cards, not HTML
    env.globals["citation"] = citation
    return env


def render(name: str, values: Mapping[str, Any]) -> str:
    """Fill the Jinja template ``model_cards/<name>.md`` with ``values`` (a missing one is an error).

    Every card of the project (models, datasets, corpora) is rendered here, with the citations
    of :data:`CITATIONS` through the template function ``citation(key)``; the HTML report
    uses the same engine (Jinja).
    """
    return _environment().get_template(f"{name}.md").render(**values)


def render_crossner_dataset_card(
    counts: Mapping[str, Mapping[str, int]], *, commit: str, repo: str = "crossner"
) -> str:
    """The body of the CrossNER dataset card; ``counts[config][split]`` = sentences."""
    count_rows = "\n".join(
        f"| {c} | {counts[c]['train']} | {counts[c]['validation']} | {counts[c]['test']} |"
        for c in CONFIGS if c in counts
    )
    label_rows = "\n".join(
        f"- **{c}** ({len(labels_for(c))} tags): " + ", ".join(f"`{t}`" for t in labels_for(c))
        for c in CONFIGS if c in counts
    )
    return render("crossner_dataset", {"commit": commit, "repo": repo, "count_rows": count_rows,
                                       "label_rows": label_rows})


# --------------------------------------------------------------------------- base models


LOCAL_MODEL = "_local_model"
"""The key under which :func:`crossner_hf.training.runs.finish_output` hands a card the base model's local path
(the portable results name a folder by its last part): the card reads the base's provenance and card there, and
prints none of it."""


def base_model_card_data(name_or_path: str, pretraining: Sequence[Mapping[str, Any]] | None = None
                         ) -> dict[str, Any]:
    """What a card can say about a base model: ``hub_id`` (or None), ``license`` and its pre-training.

    ``pretraining`` is the chain of crossner_hf pre-training steps (DAPT, NER-BERT): as given (the run that trained
    the model passes it), else the one the base's provenance record holds
    (:func:`crossner_hf.modeling.heads.read_provenance`; ``[]`` for any other encoder). A NER-BERT output that was
    pushed is its own base (``hub_id`` = its repo).
    """
    given = None if pretraining is None else [dict(step) for step in pretraining]
    packaged = getattr(name_or_path, "packaged", None)  # a ResolvedModel: the run resolved it once already
    if packaged or name_or_path.replace("_", "-").lower() == OFFLINE_ENCODER:
        return {"hub_id": OFFLINE_ENCODER_HUB_ID, "license": KNOWN_LICENSES[OFFLINE_ENCODER_HUB_ID],
                "pretraining": given or []}
    folder = Path(name_or_path).expanduser()
    if not folder.is_dir():
        hub_id = name_or_path if _REPO_ID.match(name_or_path) else None
        return {"hub_id": hub_id, "license": KNOWN_LICENSES.get(name_or_path), "pretraining": given or []}
    if packaged is None:  # not resolved by the run: is it the packaged encoder given by its folder?
        try:
            if folder.resolve() == Path(resolve_model_path(OFFLINE_ENCODER)).resolve():
                return base_model_card_data(OFFLINE_ENCODER, given)
        except ValueError:
            pass
    info: dict[str, Any] = {"hub_id": None, "license": None,
                            "pretraining": given if given is not None else read_provenance(folder)["pretraining"]}
    if (folder / "README.md").is_file():
        from huggingface_hub import ModelCard

        data = ModelCard.load(folder / "README.md").data
        base = data.base_model[0] if isinstance(data.base_model, list) and data.base_model else data.base_model
        info["hub_id"] = base if isinstance(base, str) and _REPO_ID.match(base) else None
        info["license"] = data.license
    pushed = [step["repo_id"] for step in info["pretraining"] if step.get("repo_id")]
    if pushed:
        info["hub_id"] = pushed[-1]
    return info


def write_model_card(folder: str | Path, card_data: Any, body: str) -> Path:
    """``README.md`` = ``card_data``'s YAML (a ``ModelCardData``) + ``body``; returns the path. A card is published:
    an absolute local path left in it (a setting, an error line) is cut to its last part."""
    from huggingface_hub import ModelCard

    from crossner_hf.outputs import scrub_paths

    card = ModelCard(scrub_paths(f"---\n{card_data.to_yaml()}\n---\n\n{body.lstrip()}"))
    path = Path(folder) / "README.md"
    card.save(path)
    return path


# ------------------------------------------------------------------------- NER models


def ner_eval_results(results: Mapping[str, Any]) -> list[Any]:
    """``EvalResult`` entries (test precision/recall/F1 mean over seeds, in %, per decoding)."""
    from huggingface_hub import EvalResult

    domain = results["dataset"]["name"]
    dataset_type, dataset_name = _dataset_of(results)
    out = []
    for decoding, scores in results["test_mean"].items():
        for metric in ("precision", "recall", "f1"):
            out.append(EvalResult(
                task_type="token-classification", task_name="Named Entity Recognition",
                dataset_type=dataset_type, dataset_name=dataset_name, dataset_config=domain,
                dataset_split="test", metric_type=metric, metric_value=round(100 * scores[metric], 2),
                metric_config=decoding,
                metric_name=f"Test {METRIC_NAMES[metric]} ({decoding} decoding, mean of {len(results['seeds'])} seed(s))",
            ))
    return out


def _dataset_of(results: Mapping[str, Any]) -> tuple[str, str]:
    """(dataset type, dataset name) of a run: a CrossNER domain, a Hub dataset (its id) or the user's own files."""
    dataset = results["dataset"]  # the envelope's (crossner_hf.results.shared_record)
    source, name = dataset.get("source"), dataset["name"]
    if source == "crossner":
        return "crossner", f"CrossNER {name}"
    return (source, source) if source else ("custom", name)


def _dataset_origin(results: Mapping[str, Any]) -> str:
    kind, name = _dataset_of(results)
    return f", the Hub dataset `{name}`" if kind != "custom" else ""


def _card_datasets(results: Mapping[str, Any]) -> list[str] | None:
    """The card's ``datasets:``: ``crossner``, the Hub id the data came from, or none for local files."""
    kind, name = _dataset_of(results)
    return ["crossner"] if kind == "crossner" else ([name] if kind != "custom" else None)


SCHEDULE_SETTINGS = {
    "pretrain-finetune": ("source_epochs", "source_max_steps", "source_subsample", "source_label_map"),
    "joint": ("oversample_factor", "source_subsample", "source_label_map"),
}
"""The settings only a schedule with a source uses: a card shows them for that schedule alone."""

DEFAULT_EXAMPLE = "Angela Merkel led the Christian Democratic Union in the 2017 federal election."


def _data_example(results: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(an example sentence of the run's own data, the data flags that name it on a command line)."""
    dataset = results.get("dataset") or {}
    kind, _ = _dataset_of(results)
    flags = dataset.get("flags") or (["--domain", dataset["name"]] if kind == "crossner"
                                     else ["--dataset_dir", dataset.get("source") or "YOUR_DATA"])
    return dataset.get("example") or DEFAULT_EXAMPLE, list(flags)


def write_ner_model_card(folder: str | Path, results: Mapping[str, Any], repo_id: str | None = None) -> Path:
    """``README.md`` of a fine-tuned NER model from its ``results.json`` content."""
    from huggingface_hub import ModelCardData


    config = results["config"]
    domain, decoding = results["dataset"]["name"], results["decoding"]
    other = next(d for d in results["test_mean"] if d != decoding)
    chain = results.get("pretraining")  # the run passes the kept model's chain; older results hold none
    base = base_model_card_data(results.get(LOCAL_MODEL) or results["model"], chain)
    if chain is None and not base["pretraining"]:  # the results name the base portably: the model carries its chain
        base["pretraining"] = read_provenance(folder)["pretraining"]
    best = next(r for r in results["per_seed"] if r["seed"] == results["best_seed"])
    name = f"crossner-{domain}-{results['schedule']}"
    card_data = ModelCardData(
        language="en", license=base["license"] or "unknown", library_name="transformers",
        pipeline_tag="token-classification", base_model=base["hub_id"],
        datasets=_card_datasets(results), metrics=["precision", "recall", "f1"],
        tags=["token-classification", "ner", *(["crossner"] if _dataset_of(results)[0] == "crossner" else []),
              "crossner_hf", domain, f"decoding-{decoding}"],
        model_name=repo_id or name, eval_results=ner_eval_results(results),
    )
    rows = []
    for dec in (decoding, other):
        t = results["test_mean"][dec]
        std = results["test"]["overall_f1_std"] if dec == decoding else results["test_mean"][dec].get("f1_std")
        dev = (mean_std_text(results["dev"]["overall_f1"], results["dev"]["overall_f1_std"]) if dec == decoding
               else "–")
        rows.append(f"| {dec}{' (headline)' if dec == decoding else ''} | {percent_text(t['precision'])} | "
                    f"{percent_text(t['recall'])} | {mean_std_text(t['f1'], std)} | {dev} |")
    settings = {k: config.get(k) for k in (
        "schedule", "learning_rate", "head_learning_rate", "per_device_train_batch_size", "num_train_epochs",
        "max_steps", "warmup_steps", "weight_decay", "lr_scheduler_type", "early_stopping_patience",
        *SCHEDULE_SETTINGS.get(results["schedule"], ()), "few_shot", "few_shot_fraction", "max_length", "decoding",
    ) if config.get(k) is not None and not (k == "max_steps" and config.get(k) in (-1, 0))}
    if isinstance(settings.get("source_label_map"), Mapping):  # as the flag takes it, not a Python dict
        settings["source_label_map"] = ",".join(f"{a}={b}" for a, b in settings["source_label_map"].items())
    example, flags = _data_example(results)
    n_seeds = len(results["seeds"])
    values = {
        "title": f"{_dataset_of(results)[1]} NER ({results['schedule']})",
        "domain": domain, "schedule": results["schedule"], "decoding": decoding, "other_decoding": other,
        "dataset_name": _dataset_of(results)[1],
        "dataset_text": (f"the **{domain}** domain of CrossNER" if _dataset_of(results)[0] == "crossner"
                         else f"**{domain}** (your own dataset{_dataset_origin(results)})"),
        "base_model_text": f"`{base['hub_id']}`" if base["hub_id"] else "a local encoder",
        "pretraining": _pretraining_text(base["pretraining"]),
        "seeds": ", ".join(str(s) for s in results["seeds"]),
        "result_rows": "\n".join(rows),
        "decoding_note": ("Mean ± standard deviation over the seeds." if n_seeds > 1
                          else "One seed, so no standard deviation is given."),
        "best_seed": results["best_seed"],
        "per_type_table": "```\n" + format_per_type_table(best["test"]) + "\n```",
        "repo": repo_id or "PATH_OR_REPO_ID",
        "settings_rows": "\n".join(f"| {k} | {v} |" for k, v in settings.items()),
        "example_text": json.dumps(example, ensure_ascii=False),
        "example_words": json.dumps(example.split()[:12], ensure_ascii=False),
        "data_flags": " ".join(shlex.quote(f) for f in flags),
        "data_note": ("" if "YOUR_DATA" not in flags else
                      " (`YOUR_DATA`: the folder or files it was trained from, as `crossner-hf train` read them)"),
        "n_labels": len(results["labels"]),
        "labels_order": ("in the order of the original release" if _dataset_of(results)[0] == "crossner"
                         else "in the model's id order"),
        "labels": ", ".join(f"`{t}`" for t in results["labels"]),
        "labels_note": _labels_note(results, config),
    }
    return write_model_card(folder, card_data, render("ner_model", values))


def _labels_note(results: Mapping[str, Any], config: Mapping[str, Any]) -> str:
    """Which of the head's labels are the data's (their ids are the data's: the first ones) and which a schedule
    trained on CoNLL-2003 added after them, and why; the source's types mapped onto the data's. Empty for a run
    without a source, or one recorded before results named the data's tags."""
    from crossner_hf.data.labels import format_label_map, parse_label_map

    own = (results.get("dataset") or {}).get("labels")
    labels = list(results["labels"])
    if results.get("schedule") == "direct" or not own or labels[:len(own)] != list(own):
        return ""
    added = labels[len(own):]
    label_map = parse_label_map(config.get("source_label_map"))
    text = ""
    if label_map:
        text += (f"\n\nCoNLL-2003's {', '.join(label_map)} were trained as this data's {', '.join(label_map.values())} "
                 f"(`--source_label_map {format_label_map(label_map)}`).")
    if added:
        used = ("never predicted: the model records the data's tags as its output labels, and every predictor here "
                "masks the others" if config.get("output_labels", "target") == "target"
                else "predicted too (`--output_labels union`)")
        text += (f"\n\n{', '.join(f'`{t}`' for t in added)} come from CoNLL-2003: the {results['schedule']} schedule "
                 f"trains on CoNLL-2003 with this head, and the data has no such type (nor a `--source_label_map` "
                 f"onto one), so the head got rows for them after the data's {len(own)} tags (ids {len(own)}-"
                 f"{len(labels) - 1}), learnt from CoNLL-2003 alone and {used}. Ids 0-{len(own) - 1} are the data's "
                 "own, in its order.")
    return text


def _pretraining_text(chain: Sequence[Mapping[str, Any]]) -> str:
    """One sentence per pre-training step of the base model, oldest first."""
    text = ""
    for step in chain:
        if step.get("kind") == "dapt":
            text += (f"\n\nThe encoder was adapted to the domain by masked-LM pre-training (DAPT) on the "
                     f"`{step.get('corpus_level')}` corpus level with {step.get('masking')} masking "
                     f"(p = {step.get('mlm_probability')}, {step.get('global_step')} steps).")
        elif step.get("kind") == "nerbert":
            text += (f"\n\nThe encoder was trained as an entity tagger (NER-BERT pre-training, Liu et al., 2021) on "
                     f"the NER-BERT corpus `{step.get('corpus')}` (config `{step.get('config')}`: "
                     f"{step.get('n_categories')} entity categories, {step.get('train_sentences')} sentences) "
                     f"for {step.get('global_step')} steps, keeping the checkpoint with the best validation F1 "
                     f"({percent_text(step.get('best_validation_f1'))}); that tagging head was then replaced by a "
                     "fresh "
                     "one for this model's labels.")
    return text


def write_dapt_model_card(folder: str | Path, results: Mapping[str, Any]) -> Path:
    """``README.md`` of a DAPT output (its ``results.json`` content)."""
    from huggingface_hub import ModelCardData

    base = base_model_card_data(results.get(LOCAL_MODEL) or results["model"])
    card_data = ModelCardData(
        language="en", license=base["license"] or "unknown", library_name="transformers",
        pipeline_tag="fill-mask", base_model=base["hub_id"],
        tags=["fill-mask", "domain-adaptive-pretraining", "crossner", "crossner_hf",
              f"corpus-level-{results['dataset']['level']}", f"masking-{results['masking']}"],
    )
    values = {**results, "base_model": base["hub_id"] or "a local encoder",
              "corpus": results["dataset"]["name"], "corpus_level": results["dataset"]["level"],
              "perplexity": (results["dev"] or {}).get("perplexity", "not measured")}
    return write_model_card(folder, card_data, render("dapt_model", values))


def write_nerbert_model_card(folder: str | Path, results: dict[str, Any], repo_id: str | None = None) -> Path:
    """``README.md`` of a NER-BERT output: corpus (config, size, categories), steps, best validation scores."""
    from huggingface_hub import EvalResult, ModelCardData

    corpus, best = results["corpus"], results["best_validation"]
    config = corpus["config"] or "default"
    base = base_model_card_data(results.get(LOCAL_MODEL) or results["model"])
    local = corpus["path"] is None or Path(str(corpus["path"])).exists()  # a folder, or data given in memory
    dataset = "nerbert-corpus" if local else corpus["path"]
    card_data = ModelCardData(
        language="en", license=base["license"] or "unknown", library_name="transformers",
        pipeline_tag="token-classification", base_model=base["hub_id"],
        datasets=None if local else [corpus["path"]], metrics=["precision", "recall", "f1"],
        tags=["token-classification", "ner", "ner-bert", "entity-tagging-pretraining", "crossner_hf",
              f"corpus-config-{config}"],
        model_name=repo_id or f"nerbert-{config}",
        eval_results=[EvalResult(
            task_type="token-classification", task_name="Entity tagging (NER-BERT pre-training)",
            dataset_type=dataset, dataset_name=f"NER-BERT corpus ({config})", dataset_config=config,
            dataset_split="validation", metric_type=metric, metric_value=round(100 * best[metric], 2),
            metric_name=f"Validation {METRIC_NAMES[metric]} (entity level, micro, argmax decoding)",
        ) for metric in ("precision", "recall", "f1")],
    )
    categories = corpus["categories"]
    shown = ", ".join(f"`{c}`" for c in categories[:40]) + (f", ... ({len(categories) - 40} more)"
                                                               if len(categories) > 40 else "")
    rows = {
        "corpus": (f"`{corpus['path']}`, config `{config}`" if corpus["path"] is not None
                   else "a corpus given in memory"),
        "entity categories": f"{corpus['n_categories']} ({corpus['n_labels']} IOB2 labels)",
        "train / validation sentences": f"{corpus['train_sentences']} / {corpus['validation_sentences']}"
                                        f" (of {corpus['validation_sentences_total']})",
        "optimisation steps": f"{results['global_step']} ({results['epochs']:.2f} epochs)",
        "sentences per step": f"{results['effective_batch_size']} ({results['per_device_train_batch_size']} per "
                              f"device x {results['gradient_accumulation_steps']} accumulation x "
                              f"{results['world_size']} process(es))",
        "learning rate": results["learning_rate"],
        "tokens trained on": results["tokens_seen"],
        "kept checkpoint": f"step {best['step']} (best validation F1)",
        "validation precision / recall / F1": f"{100 * best['precision']:.2f} / {100 * best['recall']:.2f} / "
                                              f"{100 * best['f1']:.2f}",
    }
    values = {"base_name": base["hub_id"] or "encoder", "config": config, "corpus_path": corpus["path"],
              "encoder": f"`{base['hub_id']}`" if base["hub_id"] else "A local encoder",
              "n_labels": corpus["n_labels"], "rows": rows, "shown": shown, "repo": repo_id or "THIS_FOLDER"}
    body = render("nerbert_model", values)
    return write_model_card(folder, card_data, body)


RNN_CARD_MODELS = {  # results["model"] -> (name, paper, class, citations)
    "bilstm-crf": ("BiLSTM-CRF", "Lample et al. 2016", "BiLSTMCRFForTokenClassification", ["crossner"]),
    "coach": ("Coach", "Liu et al., ACL 2020, as the CrossNER paper ran it", "CoachForTokenClassification",
              ["coach", "crossner"]),
    "cdlm": ("CDLM", "Jia, Liang & Zhang, ACL 2019", "CDLMForTokenClassification", ["cdlm", "crossner"]),
    "multicell": ("Multi-cell compositional LSTM", "Jia & Zhang, ACL 2020, as the CrossNER paper ran it",
                  "MultiCellForTokenClassification", ["multicell", "crossner"]),
}


def write_rnn_model_card(out: str | Path, results: Mapping[str, Any]) -> Path:
    """``README.md`` of a BiLSTM-CRF, Coach, CDLM or multi-cell LSTM output (``crossner_hf.modeling.rnn``)."""
    from huggingface_hub import EvalResult, ModelCardData

    args = results["args"]
    key = results.get("model", "bilstm-crf")
    name, paper, class_name, citations = RNN_CARD_MODELS[key]
    if name == "BiLSTM-CRF" and args.get("architecture") == "crossner":
        paper = "the CrossNER paper's baseline"
    mode = args.get("mode") or args.get("schedule") or "joint"
    f1 = round(100 * results["test"]["overall_f1"], 2)
    domain = results["dataset"]["name"]
    dataset_type, dataset_name = _dataset_of(results)
    crossner = dataset_type == "crossner"
    evals = [EvalResult(task_type="token-classification", dataset_type=dataset_type, dataset_name=dataset_name,
                        dataset_config=domain, dataset_split="test", metric_type="f1", metric_value=f1,
                        metric_config="crf-viterbi")]
    data = ModelCardData(language="en", license="mit", library_name="transformers", pipeline_tag="token-classification",
                         tags=[*(["crossner"] if crossner else []), "crossner_hf", key, mode],
                         datasets=_card_datasets(results), model_name=f"{name} {domain} ({mode})", eval_results=evals)
    values = {"name": name, "domain": domain, "mode": mode, "test_f1": f"{f1:.2f}", "paper": paper,
              "dataset_title": f"CrossNER {domain}" if crossner else domain,
              "dataset_text": (f"the **{domain}** domain of CrossNER" if crossner
                               else f"**{domain}** (your own dataset{_dataset_origin(results)})"),
              "best_epoch": results["dev"]["epoch"], "epochs": results["epochs"],
              "word_vectors": args["word_vectors"] or "random (no pre-trained vectors)",
              "class_name": class_name, "citations": citations}
    return write_model_card(out, data, render("rnn_model", values))


# ------------------------------------------------------------------------ ONNX exports


def write_onnx_model_card(folder: str | Path, record: Mapping[str, Any], source: str | Path) -> Path:
    """``README.md`` of a folder written by ``crossner-hf export``: the runtime and the F1 measured through it.

    ``record`` is the export record (:data:`crossner_hf.inference.onnx_runtime.ONNX_RECORD`); the license and
    base model come from the exported folder's own card, the labels and decoding from ``folder``'s config.
    """
    from huggingface_hub import EvalResult, ModelCard, ModelCardData

    folder, source = Path(folder), Path(source)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    labels = [config["id2label"][str(i)] for i in range(len(config["id2label"]))]
    decoding = read_provenance(config)["decoding"] or "argmax"
    source_card = ModelCard.load(source / "README.md").data if (source / "README.md").is_file() else None
    base = getattr(source_card, "base_model", None) if source_card is not None else None
    precision = record["precision"]
    runtime = f"ONNX Runtime, {precision}"
    evaluation = record.get("evaluation")
    eval_results, datasets = None, None
    if evaluation:
        name = evaluation["dataset"]
        dataset_type, dataset_name = ("crossner", f"CrossNER {name}") if name in CONFIGS else (name, name)
        datasets = ["crossner"] if name in CONFIGS else None
        eval_results = [EvalResult(
            task_type="token-classification", task_name="Named Entity Recognition", dataset_type=dataset_type,
            dataset_name=dataset_name, dataset_config=name, dataset_split=evaluation["split"], metric_type=metric,
            metric_value=round(100 * evaluation[metric], 2), metric_config=f"{decoding}, {precision}",
            metric_name=f"{evaluation['split'].capitalize()} {METRIC_NAMES[metric]} ({runtime}, {decoding} decoding)",
        ) for metric in ("precision", "recall", "f1")]
        same = ("every tag identical to the PyTorch model's" if evaluation.get("tags_identical")
                else "tags differ from the PyTorch model's on some words")
        results_text = (
            f"Entity-level micro F1 (conlleval convention) on the {dataset_name} {evaluation['split']} split "
            f"({evaluation['sentences']} sentences), measured at export through this folder "
            f"(`Tagger.from_pretrained`, {runtime}, {decoding} decoding), beside the PyTorch model it came from "
            "on the same sentences:\n\n"
            "| runtime | precision | recall | F1 |\n|---|---:|---:|---:|\n"
            f"| {runtime} (this folder) | {percent_text(evaluation['precision'])} | "
            f"{percent_text(evaluation['recall'])} | "
            f"{percent_text(evaluation['f1'])} |\n"
            f"| PyTorch (`{source.name}`) | | | {percent_text(evaluation.get('pytorch_f1'))} |\n\n"
            f"Difference {100 * (evaluation['f1'] - evaluation.get('pytorch_f1', evaluation['f1'])):+.2f} F1; {same}. "
            "Speed on a CPU: `docs/inference.md` of crossner_hf (benchmarks/inference.py).")
    else:
        results_text = ("Not measured at export (the exported folder names no dataset): run "
                        f"`crossner-hf export --model {source.name} --dataset_dir SOURCE` to measure it, or "
                        "`crossner-hf predict --model THIS_FOLDER --conll test.txt`.")
    card_data = ModelCardData(
        language="en", license=getattr(source_card, "license", None) or "unknown", library_name="onnx",
        pipeline_tag="token-classification", base_model=base, datasets=datasets,
        metrics=["precision", "recall", "f1"] if evaluation else None,
        tags=["token-classification", "ner", "crossner_hf", "onnx", "onnxruntime", precision, f"decoding-{decoding}"],
        model_name=f"{source.name}-onnx-{precision}", eval_results=eval_results,
    )
    quantization = record.get("quantization")
    settings = {"runtime": "onnxruntime (CPUExecutionProvider)", "exporter": f"{record['exporter']}, opset {record['opset']}",
                "precision": precision, "graph inputs": ", ".join(record["inputs"]), "sha256 of model.onnx": record["sha256"]}
    if quantization:
        settings.update({"quantisation": f"{quantization['method']}, {quantization['weight_type']} weights, "
                                         f"{'per channel' if quantization['per_channel'] else 'per tensor'}, "
                                         f"{quantization.get('runs', 'batches')}",
                         "quantised ops": ", ".join(quantization["op_types"]),
                         "kept in fp32": "embeddings, " + ", ".join(quantization["nodes_kept_fp32"] or ["-"])})
    values = {
        "title": f"{source.name} (ONNX, {precision})", "source": source.name, "runtime": runtime,
        "quantization_text": (" (dynamic int8 weights, activations quantised per window, each window run alone so "
                              "a sentence's tags do not depend on the batch; the embeddings and the classifier stay "
                              "fp32)" if quantization else ""),
        "decoding": decoding, "results_text": results_text, "repo": "PATH_OR_REPO_ID",
        "settings_rows": "\n".join(f"| {k} | {v} |" for k, v in settings.items()),
        "n_labels": len(labels), "labels": ", ".join(f"`{t}`" for t in labels),
    }
    return write_model_card(folder, card_data, render("onnx_model", values))
