"""Command-line parsing shared by every command, script and recipe: ``HfArgumentParser`` + YAML.

:class:`CrossNERParser` is an ``HfArgumentParser`` (one ``--flag`` per dataclass field, help
and ``choices`` from the field's ``metadata``) with three additions, in the spirit of TRL's
``TrlParser``:

- ``--config x.yaml`` supplies defaults; flags given on the command line win over it.
  Unknown YAML keys are an error that names them, so a typo never passes silently.
- A field with ``metadata={"positional": True}`` is a positional argument
  (``crossner-hf push FOLDER REPO_ID``); ``"nargs"`` in the metadata is passed through.
- Recipes whose arguments extend ``TrainingArguments`` show only their own fields (and the
  ones whose defaults they change) with ``--help``; ``--help-all`` lists all of them.

Every command's parser is made by :func:`make_command_parser` (a ``crossner-hf`` sub-parser or a script's own);
:func:`crossner_hf.cli.run_command` runs it.

Example:
    >>> from dataclasses import dataclass, field
    >>> @dataclass
    ... class Args:
    ...     domain: str = field(default="politics", metadata={"help": "CrossNER domain.",
    ...                                                        "choices": ["politics", "music"]})
    >>> parse_args((Args,), ["--domain", "music"])[0].domain
    'music'
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import sys
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml



def _hf_argparser() -> types.ModuleType:
    """``transformers.hf_argparser``, run without ``transformers``' package ``__init__`` when that is not loaded yet.

    The module needs only the standard library and PyYAML, but ``import transformers.hf_argparser`` first runs the
    package's ``__init__`` (its lazy-name table, the dependency version checks, ``transformers.utils``: 0.8-1.2 CPU
    s here), which a command that never touches a model pays before its first line of work: the Wikipedia builders
    parse their flags and never import transformers otherwise. The file is run under its own name, so when a later
    command imports ``transformers`` its ``HfArgumentParser`` is this very class (the package's lazy names import
    their module through ``sys.modules``). If the file cannot be run alone (a future version importing from its
    package), the ordinary import is taken.
    """
    import importlib
    import importlib.util

    name = "transformers.hf_argparser"
    if name in sys.modules or "transformers" in sys.modules:
        return importlib.import_module(name)
    package = importlib.util.find_spec("transformers")  # finds the package without running its __init__
    locations = list(package.submodule_search_locations or ()) if package is not None else []
    spec = importlib.util.spec_from_file_location(name, Path(locations[0]) / "hf_argparser.py") if locations else None
    if spec is None or spec.loader is None:
        return importlib.import_module(name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ImportError:  # it needs its package now: run it the ordinary way, package first
        sys.modules.pop(name, None)
        return importlib.import_module(name)
    return module


# hf_argparser alone, not the package: TrainingArguments (and through it torch) is imported only by commands whose
# arguments extend it, so `crossner-hf predict --help` starts without torch, and the builders without transformers
HfArgumentParser = _hf_argparser().HfArgumentParser


class WorkflowConfig:
    """What every workflow's config shares (``FinetuneConfig``, ``DAPTConfig``, ``NERBERTConfig``, the RNN
    recipes' configs, the corpus builders'). ``train``, ``dapt`` and ``nerbert`` parse their config beside their
    model and data flags (two dataclasses, one parser: TRL's pattern) and hand it down as parsed. The commands whose
    config is not a ``TrainingArguments`` extend it with their flags and hand down only the config part
    (:meth:`from_arguments`), so nothing below the command sees the flags."""

    def __post_init__(self) -> None:
        # a config without output_dir leaves the folder to its runner (crossner_hf.outputs.with_output_dir names it
        # after the data); TrainingArguments' own __post_init__ would make it ./trainer_output
        parent = getattr(super(), "__post_init__", None)
        if parent is None:
            return
        unnamed = getattr(self, "output_dir", "") is None
        parent()
        if unnamed:
            self.output_dir = None

    @classmethod
    def from_arguments(cls, args: Any) -> Any:
        """A new ``cls`` with the values of ``args`` (an object that extends it) for ``cls``'s own fields. Not for a
        ``TrainingArguments`` config: its ``__post_init__`` converts values in place and must not run twice."""
        return cls(**{f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if f.init})


def preset_path(name: str) -> Path | None:
    """The packaged preset ``name`` (``paper/crossner_direct``, ``.yaml`` optional), or ``None``.

    The presets' source is the checkout's ``trainer_recipes/configs/``; the wheel ships it as the
    package data ``crossner_hf.presets``, so ``--config paper/crossner_direct`` works from any install.
    """
    from importlib import resources

    stem = name.removesuffix(".yaml")
    folder = resources.files("crossner_hf.presets")
    candidate = folder.joinpath(*f"{stem}.yaml".split("/"))
    return Path(str(candidate)) if candidate.is_file() else None


@dataclasses.dataclass(frozen=True)
class Preset:
    """A packaged preset (or any ``--config`` YAML) in Python: its values, and the typed config they make.

    >>> preset = load_preset("paper/crossner_direct")
    >>> preset.command, preset.model, preset.values["seeds"]
    ('train', 'bert-base-cased', [555, 666, 777])
    >>> from crossner_hf import FinetuneConfig
    >>> preset.config(FinetuneConfig, output_dir="out").decoding   # doctest: +SKIP
    'argmax'
    """

    name: str
    values: dict[str, Any]
    command: str | None
    """The command it is for (its ``# command:`` line), e.g. ``train``, ``dapt``, ``bilstm-crf``."""

    @property
    def model(self) -> str | None:
        """The encoder it names (``model_name_or_path``), which the runners take as an argument, not a setting."""
        return self.values.get("model_name_or_path")

    def config(self, config_class: type, **overrides: Any) -> Any:
        """``config_class`` (e.g. :class:`~crossner_hf.training.training_args.FinetuneConfig`) built from the
        preset's values for its fields and ``overrides``; the model and data keys it has no field for (``domain``,
        ``model_name_or_path``, ...) stay in :attr:`values` for the caller to pass as arguments."""
        names = {f.name for f in dataclasses.fields(config_class) if f.init}
        unknown = set(overrides) - names
        if unknown:
            raise ValueError(f"{config_class.__name__} has no field {sorted(unknown)}; check the names.")
        # the overrides win over the preset's values, as flags win over --config on the command line
        return config_class(**{**{k: v for k, v in self.values.items() if k in names}, **overrides})


def load_preset(name: str | Path) -> Preset:
    """A packaged preset by name (``paper/crossner_direct``, ``minilm``, ``politics_direct_minilm``) or a YAML file
    of one; the values are the ones ``--config`` gives the command (``extends:`` resolved)."""
    values = load_yaml_config(name)
    path = Path(name) if Path(name).is_file() else preset_path(str(name))
    first = path.read_text(encoding="utf-8").splitlines()[:1] if path is not None else []
    command = first[0].split(":", 1)[1].strip() if first and first[0].startswith("# command:") else None
    return Preset(str(name), values, command)


def load_yaml_config(path: str | Path, _extending: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The flag values of a YAML file or packaged preset; ``extends: NAME`` (a file beside it or a packaged preset)
    supplies values the file does not set, so an encoder's settings live in one preset (``minilm``) that a
    domain's preset (``politics_direct_minilm``) builds on."""
    path = Path(path)
    if not path.is_file():
        packaged = preset_path(str(path))
        if packaged is None:
            raise FileNotFoundError(f"--config {path}: no such file, nor a packaged preset of that name (e.g. "
                                    "paper/crossner_direct; `crossner-hf reproduce --help` lists the experiments).")
        path = packaged
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ValueError(f"--config {path}: not valid YAML ({where}{problem}); fix the file.") from None
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: expected a mapping of flag names to values.")
    base = data.pop("extends", None)
    if base is None:
        return data
    if not isinstance(base, str) or not base:
        raise ValueError(f"--config {path}: extends: {base!r} must name one preset or YAML file.")
    beside = [c for c in (path.parent / base, path.parent / f"{base}.yaml") if c.is_file()]
    parent = beside[0] if beside else preset_path(base)
    if parent is None:
        raise FileNotFoundError(f"--config {path}: extends: {base} is neither a file beside it nor a packaged "
                                "preset (e.g. minilm); fix the name.")
    if parent.resolve() in _extending or parent.resolve() == path.resolve():
        raise ValueError(f"--config {path}: extends: {base} leads back to itself; break the cycle.")
    return {**load_yaml_config(parent, (*_extending, path.resolve())), **data}


def _training_arguments(dtype: type) -> type | None:
    """``transformers.TrainingArguments`` if ``dtype`` extends it (then it is imported already), else None."""
    for klass in getattr(dtype, "__mro__", ()):
        if klass.__name__ == "TrainingArguments" and klass.__module__ == "transformers.training_args":
            return klass
    return None


def _own_fields(dtype: type) -> set[str] | None:
    """Fields a ``TrainingArguments`` subclass declares itself (None for other dataclasses)."""
    TrainingArguments = _training_arguments(dtype)
    if TrainingArguments is None or dtype is TrainingArguments:
        return None
    own: set[str] = set()
    for klass in dtype.__mro__:
        if klass is TrainingArguments:
            break
        own.update(vars(klass).get("__annotations__", {}))
    return own


class _HelpAll(argparse.Action):
    """``--help-all``: print the help with every inherited ``TrainingArguments`` flag, then exit."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        full = CrossNERParser(parser.dataclass_types, prog=parser.prog, description=parser.description,
                              show_all=True, formatter_class=HelpFormatter)
        full.print_help()
        parser.exit()


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each flag; the description (a module docstring) kept as written."""


class CrossNERParser(HfArgumentParser):
    """``HfArgumentParser`` with ``--config``, positional fields and a short ``--help``."""

    def __init__(self, dataclass_types: Any = None, *, show_all: bool = False, **kwargs: Any):
        self.show_all = show_all
        self._short = False
        kwargs.setdefault("formatter_class", HelpFormatter)
        # a prefix must never stand for a longer flag: --max_steps must not silently mean --max_steps_per_epoch
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(dataclass_types, **kwargs)
        self.yaml_flag = "--config"
        self.add_argument(
            self.yaml_flag, dest="_yaml_config", default=None, metavar="FILE.yaml",
            help="YAML file of flag values; command-line flags override it.",
        )
        if self._short:
            self.add_argument(
                "--help-all", action=_HelpAll,
                help="show every flag, including all inherited transformers TrainingArguments flags",
            )
            self.epilog = (
                "Only this recipe's own flags are listed; every transformers TrainingArguments flag "
                "is accepted too (see --help-all)."
            )

    def _add_dataclass_arguments(self, dtype: Any) -> None:
        own = _own_fields(dtype)
        if own is None:
            return super()._add_dataclass_arguments(dtype)
        # Same as the parent, but in three groups: the recipe's own flags first, then the
        # TrainingArguments whose defaults it changes, then (only with --help-all) the rest.
        self._short = not self.show_all
        inherited = {f.name for f in dataclasses.fields(_training_arguments(dtype))}
        groups = {
            "own": self.add_argument_group(f"{dtype.__name__} options"),
            "changed": self.add_argument_group("TrainingArguments with changed defaults"),
            "rest": self.add_argument_group("all other TrainingArguments"),
        }
        hints = _type_hints(dtype)
        for field in dataclasses.fields(dtype):
            if not field.init:
                continue
            field = _copy_field(field, hints[field.name])
            kind = "rest" if field.name not in own else ("changed" if field.name in inherited else "own")
            if kind == "rest" and not self.show_all:
                field.metadata = types.MappingProxyType({**field.metadata, "help": argparse.SUPPRESS})
            self._parse_dataclass_field(groups[kind], field)
        if self._short:
            self.usage = f"{self.prog} [--config FILE.yaml] [--FLAG VALUE ...]"

    @staticmethod
    def _parse_dataclass_field(parser: argparse.ArgumentParser, field: dataclasses.Field) -> None:
        text = field.metadata.get("help")
        if isinstance(text, str) and "%" in text and text is not argparse.SUPPRESS:
            # argparse %-formats help strings: a literal "15%" would crash --help
            field = copy.copy(field)
            field.metadata = types.MappingProxyType({**field.metadata, "help": text.replace("%", "%%")})
        if not field.metadata.get("positional"):
            return HfArgumentParser._parse_dataclass_field(parser, field)
        kwargs = {k: v for k, v in field.metadata.items() if k in ("help", "nargs", "choices", "metavar")}
        if field.default is not dataclasses.MISSING:
            kwargs["default"] = field.default
            kwargs.setdefault("nargs", "?")
        elif field.default_factory is not dataclasses.MISSING:
            kwargs["default"] = field.default_factory()
        parser.add_argument(field.name, **kwargs)

    def parse_args_and_config(self, argv: Sequence[str] | None = None) -> tuple[Any, ...]:
        """Parse ``argv`` (default ``sys.argv[1:]``) into the dataclasses, honouring ``--config``."""
        argv = list(sys.argv[1:] if argv is None else argv)
        pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)  # --config must not match --config_file
        pre.add_argument(self.yaml_flag, dest="yaml", default=None)
        known, _ = pre.parse_known_args(argv)
        if known.yaml:
            defaults = load_yaml_config(known.yaml)
            dests = {action.dest for action in self._actions} - {"_yaml_config"}
            unknown = sorted(set(defaults) - dests)
            if unknown:
                raise ValueError(f"{self.yaml_flag} {known.yaml}: unknown keys {unknown}.")
            for action in self._actions:
                if action.dest in defaults:
                    action.required = False  # the YAML file supplies it
                    if action.nargs in ("+", "*") and not isinstance(defaults[action.dest], list):
                        defaults[action.dest] = [defaults[action.dest]]  # `configs: ai` means [ai]
                    # argparse converts and checks only what the command line gives, never a default: the
                    # file's values go through the flag's type and choices here, before anything loads
                    defaults[action.dest] = _checked_value(action, defaults[action.dest], f"{self.yaml_flag} "
                                                                                           f"{known.yaml}")
            self.set_defaults(**defaults)
        outputs = self.parse_args_into_dataclasses(args=argv, look_for_args_file=False)
        # the YAML file's name itself is not part of any dataclass
        return tuple(o for o in outputs if not isinstance(o, argparse.Namespace) or vars(o).keys() - {"_yaml_config"})


def _checked_value(action: argparse.Action, value: Any, where: str) -> Any:
    """``value`` of a config file converted by ``action``'s type and checked against its choices, as the same
    value given on the command line would be; a wrong one is one line naming the file, the key and the flag."""
    if value is None:
        return None
    flag = action.option_strings[0] if action.option_strings else action.dest

    def one(item: Any) -> Any:
        if isinstance(item, (list, dict)):
            raise ValueError(f"{where}: {action.dest}: {item!r} is a {type(item).__name__}; {flag} takes one value.")
        converted = item
        kind = action.type
        if callable(kind) and not (kind is str and isinstance(item, str)):
            if kind is int and isinstance(item, float) and not item.is_integer():
                raise ValueError(f"{where}: {action.dest}: {item!r} is not a whole number ({flag} takes an int).")
            try:
                converted = kind(str(item).lower() if isinstance(item, bool) else str(item))
            except (TypeError, ValueError, argparse.ArgumentTypeError):
                name = getattr(kind, "__name__", "value")
                raise ValueError(f"{where}: {action.dest}: {item!r} is not a valid {name} for {flag}.") from None
        if action.choices is not None and converted not in action.choices:
            choices = ", ".join(map(str, action.choices))
            raise ValueError(f"{where}: {action.dest}: {item!r} is not one of {choices} ({flag}).")
        return converted

    if action.nargs in ("+", "*") or isinstance(action.nargs, int):
        return [one(v) for v in value]
    return one(value)


def _type_hints(dtype: type) -> dict[str, Any]:
    from typing import get_type_hints

    return get_type_hints(dtype)


def _copy_field(field: dataclasses.Field, resolved_type: Any) -> dataclasses.Field:
    # HfArgumentParser rewrites field.type in place; work on a copy so the dataclass keeps its own.
    new = copy.copy(field)
    new.type = resolved_type
    return new


def parse_args(dataclass_types: Iterable[type], argv: Sequence[str] | None = None) -> tuple[Any, ...]:
    """Parse ``argv`` into instances of ``dataclass_types``, honouring ``--config FILE.yaml``."""
    return CrossNERParser(list(dataclass_types)).parse_args_and_config(argv)


# ----------------------------------------------------------------- what every command's parser shares

def make_command_parser(
    subparsers: Any | None, name: str, dataclass_types: Sequence[type], *, help: str, description: str,
    prog: str | None = None,
) -> CrossNERParser:
    """The command's parser: a sub-parser of ``crossner-hf`` or a standalone one for a script."""
    if subparsers is not None:
        return subparsers.add_parser(
            name, dataclass_types=list(dataclass_types), help=help, description=description,
        )
    return CrossNERParser(list(dataclass_types), prog=prog, description=description)


def set_torch_threads(threads: int | None) -> None:
    """``--threads N`` for a PyTorch model (an ONNX folder gets N through ``Tagger.from_pretrained(threads=N)``)."""
    if threads is None:
        return
    if threads < 1:
        raise ValueError(f"--threads {threads}: give a positive number of CPU threads.")
    import torch

    torch.set_num_threads(threads)
