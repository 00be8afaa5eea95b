"""The packages' lazy names (PEP 562): ``import crossner_hf.data`` imports none of its submodules; a name's module is
imported when the name is first used. Each package's ``__getattr__`` / ``__dir__`` delegate here, so importing a
package calls nothing (a ``train`` run's route, issue 55, enters this module only when a lazy name is used)."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any


def lazy_attribute(package: str, table: Mapping[str, str], name: str) -> Any:
    """``package``'s lazy ``name``, imported from its module in ``table`` (a full module name, or a submodule's name
    relative to ``package``)."""
    if name not in table:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    module = table[name]
    return getattr(importlib.import_module(module if module.startswith("crossner_hf.") else f".{module}", package),
                   name)


def lazy_dir(table: Mapping[str, str], defined: Iterable[str] = ()) -> list[str]:
    """What ``dir(package)`` lists: its lazy names and the ``defined`` ones."""
    return sorted(set(table) | set(defined))
