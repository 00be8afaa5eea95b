"""Lazy package attributes (PEP 562), so ``import crossner_hf.x`` stays cheap until a name is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(package: str, names: Mapping[str, str],
                    eager: Mapping[str, Any] | None = None) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps an attribute to the module defining it
    (relative names like ``.levels`` resolve against ``package``)."""

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(eager or ()) | set(names))

    return __getattr__, __dir__
