"""Optional dependencies: the core install is datasets, training, prediction and the metric.

Extras (``pip install "crossner_hf[NAME]"``): ``wikipedia`` (datatrove, mwparserfromhell: the
NER-BERT and domain corpora from dumps), ``corpora`` (pyahocorasick: DAPT corpus levels from
text + an entity list), ``report`` (nervaluate: the HTML report's partial-match schemes),
``plots`` (matplotlib, scikit-learn: every PNG, t-SNE, silhouettes, the stopword list of
``stats``), ``ray`` (the Ray executor), ``onnx`` (onnx, onnxruntime: ``crossner-hf export`` and ONNX
folders), ``all``. :func:`require` imports a module of an extra or
raises :class:`MissingExtraError`, one line naming the pip command; the CLI prints it as is.
"""

from __future__ import annotations

import importlib
from types import ModuleType

EXTRAS: dict[str, tuple[str, ...]] = {
    "wikipedia": ("datatrove", "mwparserfromhell"),
    "corpora": ("ahocorasick",),
    "report": ("nervaluate",),
    "plots": ("matplotlib", "sklearn"),
    "ray": ("ray",),
    "slurm": ("submitit",),
    "onnx": ("onnxruntime", "onnx"),
}
"""Extra -> the modules it provides (what :func:`require` checks)."""


class MissingExtraError(ImportError):
    """A module of an optional extra is not installed; the message names the pip command."""


def require(module: str, extra: str) -> ModuleType:
    """``importlib.import_module(module)``, or a one-line :class:`MissingExtraError` naming ``extra``."""
    if module.split(".")[0] not in EXTRAS[extra]:
        raise ValueError(f"require({module!r}, {extra!r}): {module} is not part of the {extra} extra.")
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"{module} is not installed ({err}); it comes with the {extra} extra: "
            f'pip install "crossner_hf[{extra}]"'
        ) from None
