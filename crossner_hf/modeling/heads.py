"""Building token classifiers, and the one provenance record every saved model carries.

Model construction lives here and nowhere else: :func:`token_classifier_from_pretrained` gives
an ``AutoModelForTokenClassification`` for a label list from any encoder, DAPT output, NER-BERT
output or fine-tuned model, replacing a head trained for other labels (with a warning).

The provenance record is one ``config.json`` key, ``crossner_provenance``, so it travels with
``save_pretrained``/``from_pretrained`` and a Hub push::

    {"decoding": "bio-viterbi",                     # what the reported F1 used (predictors apply it)
     "head": {"trained_by": "train", "labels": 19}, # who trained the current tagging head, if anyone
     "pretraining": [                               # every pre-training step, oldest first
        {"kind": "dapt", "corpus": ..., "corpus_level": "integrated", "masking": "span-adjacent", ...},
        {"kind": "nerbert", "corpus": ..., "config": "all", "global_step": 380, ...}]}

Recipes append to it (:func:`record_pretraining`, :func:`record_decoding`, :func:`record_head`);
cards and predictors read it through :func:`read_provenance` only.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

PROVENANCE_ATTRIBUTE = "crossner_provenance"
"""``config.json`` key of the provenance record."""

DECODINGS = ("bio-viterbi", "argmax")
"""The decodings a model may carry (:mod:`crossner_hf.modeling.decoding` implements them)."""

DEFAULT_DECODING = "argmax"
"""Decoding of models that record none (any other token-classification model): what ``pipeline`` does."""


def check_decoding(decoding: str, where: str = "decoding") -> str:
    """``decoding`` if it is one of :data:`DECODINGS`, else a ``ValueError`` saying what to choose (the one check)."""
    if decoding not in DECODINGS:
        raise ValueError(f"{where}={decoding!r}: choose one of {', '.join(DECODINGS)}.")
    return decoding

HEAD_PREFIXES = ("classifier.", "score.")
"""Parameter-name prefixes of a token-classification head (BERT-like ``classifier``, others ``score``)."""


def _empty() -> dict[str, Any]:
    return {"decoding": None, "head": None, "pretraining": [], "output_labels": None}


def read_provenance(source: Any) -> dict[str, Any]:
    """The provenance record of a model, a config, a ``config.json`` dict or a model folder (a fresh copy).

    Anything that records none (a Hub encoder, a foreign model) gives the empty record.
    """
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser() / "config.json"
        raw = json.loads(path.read_text(encoding="utf-8")).get(PROVENANCE_ATTRIBUTE) if path.is_file() else None
    elif isinstance(source, Mapping):
        raw = source.get(PROVENANCE_ATTRIBUTE)
    else:
        raw = getattr(getattr(source, "config", source), PROVENANCE_ATTRIBUTE, None)
    record = _empty()
    if isinstance(raw, Mapping):
        record.update(copy.deepcopy(dict(raw)))
        record["pretraining"] = list(record.get("pretraining") or [])
    return record


def _write(config: Any, record: Mapping[str, Any]) -> None:
    setattr(config, PROVENANCE_ATTRIBUTE, dict(record))


def record_decoding(model_or_config: Any, decoding: str) -> None:
    """Record the decoding the model's reported scores used."""
    check_decoding(decoding)
    config = getattr(model_or_config, "config", model_or_config)
    record = read_provenance(config)
    record["decoding"] = decoding
    _write(config, record)


def record_head(model_or_config: Any, trained_by: str, **details: Any) -> dict[str, Any]:
    """Record which recipe trained the current tagging head (``train``, ``nerbert``, ...); returns the model's whole
    record (a copy), which a run hands to its card rather than the card reading it back."""
    config = getattr(model_or_config, "config", model_or_config)
    record = read_provenance(config)
    record["head"] = {"trained_by": trained_by, **details}
    _write(config, record)
    return copy.deepcopy(record)


def record_pretraining(model_or_config: Any, step: Mapping[str, Any]) -> None:
    """Append one pre-training step (``{"kind": "dapt" | "nerbert", ...}``) to the chain."""
    if "kind" not in step:
        raise ValueError("A pre-training step needs a 'kind' (dapt or nerbert).")
    config = getattr(model_or_config, "config", model_or_config)
    record = read_provenance(config)
    record["pretraining"].append(dict(step))
    _write(config, record)


def record_output_labels(model_or_config: Any, labels: Sequence[str] | None) -> None:
    """Record the labels predictions may use (the target's schema), or ``None`` for every label of the head.

    A joint or pretrain-finetune head also holds the source's types the target lacks (they are trained from
    the source); recording the target's labels makes every predictor mask the others at decoding
    (:func:`excluded_labels`), so a user's model answers in the user's schema.
    """
    config = getattr(model_or_config, "config", model_or_config)
    record = read_provenance(config)
    record["output_labels"] = None if labels is None else list(labels)
    _write(config, record)


def excluded_labels(model_or_config: Any) -> list[str]:
    """The head's labels that predictions must not use: those outside the recorded ``output_labels``."""
    config = getattr(model_or_config, "config", model_or_config)
    allowed = read_provenance(config).get("output_labels")
    if not allowed:
        return []
    id2label = {int(k): v for k, v in getattr(config, "id2label", {}).items()}
    return [name for _, name in sorted(id2label.items()) if name not in set(allowed)]


def model_decoding(model_or_config: Any, override: str | None = None) -> str:
    """The decoding to use: ``override`` if given, else the model's recorded one, else argmax."""
    if override is not None:
        return check_decoding(override)
    recorded = read_provenance(model_or_config)["decoding"]
    if recorded is None:
        return DEFAULT_DECODING
    return check_decoding(recorded, f"the model's {PROVENANCE_ATTRIBUTE} decoding")


def _head_labels(config: Any) -> list[str] | None:
    """The labels of a checkpoint's token-classification head, or None if it has none."""
    if not any(str(a).endswith("ForTokenClassification") for a in (getattr(config, "architectures", None) or [])):
        return None
    return [config.id2label[i] for i in range(config.num_labels)]


def token_classifier_from_pretrained(path: str, labels: Sequence[str], **kwargs: Any):
    """``AutoModelForTokenClassification`` for ``labels``; a head trained for other labels is replaced.

    A checkpoint that already tags other labels (a NER-BERT output with its corpus's
    categories, a model fine-tuned on another domain) gets a freshly initialised head,
    with a warning naming the dropped head (who trained it, from the provenance record) and
    its size. A head with the same labels in the same order is kept (e.g. the source stage of
    pretrain-finetune), and an encoder without one (a masked-LM checkpoint) gets a new head.
    """
    import torch
    from transformers import AutoConfig, AutoModelForTokenClassification

    config = AutoConfig.from_pretrained(path)
    old = _head_labels(config)
    replace = old is not None and list(old) != list(labels)
    model = AutoModelForTokenClassification.from_pretrained(
        path, id2label=dict(enumerate(labels)),  # num_labels follows id2label
        label2id={t: i for i, t in enumerate(labels)}, ignore_mismatched_sizes=replace, **kwargs,
    )
    if not replace:
        return model
    heads = [p.rstrip(".") for p in HEAD_PREFIXES if hasattr(model, p.rstrip("."))]
    head = read_provenance(config)["head"] or {}
    kind = "NER-BERT entity-tagging head" if head.get("trained_by") == "nerbert" else "token-classification head"
    logger.warning(
        "%s: dropping its %s `%s` (%d labels) trained for other labels; a freshly initialised %d-label head "
        "for the target labels takes its place.", path, kind, "/".join(heads), len(old), len(labels),
    )
    record = read_provenance(model)
    record["head"] = None  # the new head is untrained until a recipe records it
    _write(model.config, record)
    if len(old) == len(labels):
        # Same shape: from_pretrained loaded the old weights, so initialise them as a new layer would be.
        std = getattr(model.config, "initializer_range", 0.02)
        with torch.no_grad():
            for module in (m for h in heads for m in getattr(model, h).modules() if isinstance(m, torch.nn.Linear)):
                module.weight.normal_(0.0, std)
                if module.bias is not None:
                    module.bias.zero_()
    return model


def load_checked(name_or_path: str, auto_class: Any, *, hint: str, device: str | None = None):
    """``(model, tokenizer)`` of a folder, the packaged encoder's name or a Hub id, in eval mode.

    A folder that does not exist (when the name cannot be a Hub id, or the Hub is offline) or
    has no ``config.json`` is a one-line ``FileNotFoundError`` naming the path and ``hint``
    (what to pass instead). The load report (missing/unexpected keys) is silenced: dropping or
    adding a head is what callers ask for, and they check the result themselves.
    """
    import re

    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    from crossner_hf.encoders import hub_offline, resolve_model_path

    path = resolve_model_path(name_or_path, check_offline=False)  # the message below says more
    local = Path(path).expanduser()
    looks_like_repo = re.fullmatch(r"[\w.-]+/[\w.-]+", path) is not None and not path.startswith(".")
    if not local.exists() and (not looks_like_repo or hub_offline()):
        why = " (HF_HUB_OFFLINE is set, so the Hub was not asked)" if looks_like_repo else ""
        raise FileNotFoundError(f"No model folder at {path}{why}; {hint}")
    if local.is_dir() and not (local / "config.json").is_file():
        raise FileNotFoundError(f"{local} has no config.json; {hint}")
    source = str(local) if local.exists() else path
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        model = auto_class.from_pretrained(source)
    except OSError as err:
        raise FileNotFoundError(f"Could not load a model from {path}: {str(err).splitlines()[0]}") from None
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(source)
    if device is not None:
        model.to(device)
    model.eval()
    return model, tokenizer
