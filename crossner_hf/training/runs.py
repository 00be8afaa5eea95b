"""The run skeleton every runner shares (``finetune``, ``dapt``, ``pretrain_nerbert``, the RNN runners).

1. **the folder**: :func:`with_output_dir` names a folderless config's folder
   (:func:`crossner_hf.outputs.default_output_dir`: ``outputs/<data name>-<workflow or schedule>``); the runner
   claims it with :func:`claimed_run` (:func:`crossner_hf.outputs.claimed_output_dir`: the lock,
   ``overwrite_output_dir``, the check that a resume continues the same run: the config's decisive settings, the
   model and the data), which also resolves the model once (:func:`crossner_hf.encoders.resolved_model`);
2. **the resume point**, one meaning for every runner (:func:`resume_point`): ``False`` (or ``None``, ``"false"``)
   starts afresh, ``True`` (or ``"true"``, ``"latest"``) continues from the latest *complete* checkpoint, a
   checkpoint folder continues from that one;
3. **the finish** (:func:`finish_output`): stage the folder, save the model into it, write the results file, the
   card (told the repo it is pushed to, :func:`hub_repo_id`), move it all into place at once, then push when
   ``push_to_hub`` is set.

It sits below every runner (the fine-tuning schedules, DAPT, NER-BERT, the RNN recipes) and imports none of them;
importing it loads neither torch nor transformers (``tests/test_layers.py`` checks both), so a runner that never
fine-tunes does not load the ``Trainer`` to claim and finish its run.

Example:
    >>> wants_resume("false"), wants_resume("latest"), wants_resume(None)
    (False, True, False)
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from crossner_hf.encoders import model_name, resolved_model
from crossner_hf.outputs import (claimed_output_dir, decisive_settings, default_output_dir, portable, staged_outputs,
                                 usual_modes)

logger = logging.getLogger(__name__)


_FALSE = ("", "false", "no", "0", "none")
_LATEST = ("true", "latest", "yes", "1")


def wants_resume(value: bool | str | None) -> bool:
    """Whether ``resume_from_checkpoint`` asks to resume: ``True``, ``"true"``/``"latest"``/``"yes"``/``"1"`` or a
    checkpoint path do; ``False``, ``None``, ``"false"``/``"no"``/``"0"`` do not (``bool("false")`` would)."""
    if value is None or isinstance(value, bool):
        return bool(value)
    return str(value).strip().lower() not in _FALSE


def resume_point(value: bool | str | None, folder: str | Path, *, main: bool = True,
                 flag: str = "--resume_from_checkpoint", one_of_several: bool = False) -> str | None:
    """The checkpoint a run in ``folder`` continues from, or ``None`` (start afresh, or nothing to resume yet).

    ``value``: see :func:`wants_resume`; a path continues from that checkpoint (for ``one_of_several`` stages, each
    in its own folder, only the stage whose folder holds it; the others resume from their latest), and a path that
    is not a folder is a one-line error. ``main``: only the main process removes incomplete checkpoints."""
    if not wants_resume(value):
        return None
    folder = Path(folder)
    text = str(value).strip()
    if not isinstance(value, bool) and text.lower() not in _LATEST:
        path = Path(text)
        if not path.is_dir():
            raise ValueError(f"{flag} {text!r}: no such folder; pass a checkpoint-* folder, or true for the latest "
                             "complete checkpoint in --output_dir.")
        if not one_of_several or path.resolve().parent == folder.resolve():
            return str(path)
    if not folder.is_dir():
        return None
    # imported here: the checkpoint callbacks beside it load torch and transformers, which claiming a run needs not
    from crossner_hf.training.checkpoints import last_complete_checkpoint

    latest = last_complete_checkpoint(folder, clean=main)
    if latest is None:
        logger.info("%s: no complete checkpoint in %s yet; starting from the beginning.", flag, folder)
    else:  # said in the run's log, so a rerun after a kill shows where it went on from
        logger.info("%s: continuing from %s (step %s).", flag, latest, Path(latest).name.rpartition("-")[2])
    return latest


class ClaimedRun(NamedTuple):
    """What :func:`claimed_run` settles once for the whole run."""

    model_path: str | None
    """The folder the model loads from (``None`` when the runner resolves it itself)."""
    model_name: str | None
    """The name the results and the card record for the model (for a ``runner`` named, the
    :class:`crossner_hf.encoders.ResolvedModel`: the name, with where it loads from and whether it is the packaged
    encoder, which the card reads instead of resolving it again)."""
    resume: bool
    """Whether the run continues the one in its folder (:func:`wants_resume`)."""


def with_output_dir(config: Any, data_name: str | Path | None, workflow: str) -> Any:
    """``config`` when it names its folder, else a copy of it whose ``output_dir`` is
    :func:`~crossner_hf.outputs.default_output_dir`'s (the caller's config stays as it was given): how every runner
    names a folderless config's folder, before :func:`claimed_run` claims it."""
    if config.output_dir is not None:
        return config
    named = copy.deepcopy(config)  # deepcopy + setattr: a TrainingArguments' __post_init__ must not run twice
    named.output_dir = default_output_dir(data_name, workflow)
    return named


@contextmanager
def claimed_run(config: Any, model: Any, data: Mapping[str, Any], *, stale: tuple[str, ...], runner: str | None = None,
                tokenizer: Any = None) -> Iterator[ClaimedRun]:
    """The start of every run: ``config.output_dir`` claimed for this run (its identity: the config's decisive
    settings, the model's name and ``data``, what the config does not hold) and, for a ``runner`` named, the model
    resolved once (:func:`crossner_hf.encoders.resolved_model`). Yields a :class:`ClaimedRun`; ``stale``: what
    ``overwrite_output_dir`` removes of an earlier run."""
    main = getattr(config, "process_index", 0) == 0
    name, resume = model_name(model), wants_resume(config.resume_from_checkpoint)
    identity = {**decisive_settings(config.to_dict()), "model": name, **data}
    with claimed_output_dir(config.output_dir, identity, resume=resume, overwrite=config.overwrite_output_dir,
                            stale=stale, main=main):
        if runner is None:
            yield ClaimedRun(None, name, resume)
        else:
            resolved = resolved_model(model, tokenizer, config.output_dir, runner, main=main)
            yield ClaimedRun(resolved.path, resolved, resume)


def hub_repo_id(config: Any) -> str | None:
    """The repo a run pushes to: ``--hub_model_id``, else the output folder's name; ``None`` without
    ``push_to_hub``."""
    if not getattr(config, "push_to_hub", False):
        return None
    return config.hub_model_id or Path(config.output_dir).resolve().name


def finish_output(folder: str | Path, results: dict[str, Any], *, save: Callable[[Path], Any],
                  card: Callable[..., Any] | None = None, push: Any = None, readable: tuple[Path, ...] = (),
                  base_model: str | None = None) -> Path:
    """The end of every run: ``save(stage)`` writes the model into a staging folder, then ``results`` (made
    portable: no local paths) and ``card(stage, results, repo_id=)`` (``repo_id``: where ``push`` pushes,
    :func:`hub_repo_id`); the stage replaces ``folder``'s outputs all at once
    (:func:`crossner_hf.outputs.staged_outputs`); then ``push`` (a config with ``push_to_hub``) pushes it (the best
    model, tokenizer, results and card; the per-seed models and checkpoints stay local). The card is written from
    the portable results too (no absolute path, in strings neither). ``readable``: folders the run wrote beside
    the stage (the per-seed models), given the usual modes as the stage is. ``base_model``: the model the run
    started from as :func:`claimed_run` resolved it, whose provenance the card reads (default: ``results``'
    ``model``). Call it on the main process only."""
    folder = Path(folder)
    for path in readable:  # save_pretrained leaves 0600: a teammate reads every seed's model too
        usual_modes(path)
    shown = portable(results)  # what is published: results.json and the card name no local path, in strings too
    repo_id = hub_repo_id(push)
    with staged_outputs(folder) as stage:  # the model, results and card appear together or not at all
        save(stage)
        (stage / "results.json").write_text(json.dumps(shown, indent=2, default=str))
        if card is not None:
            from crossner_hf.publishing.cards import LOCAL_MODEL

            # the card prints the portable results; the base model's local folder is where it reads its provenance
            base = base_model if base_model is not None else results.get("model")
            card(stage, {**shown, LOCAL_MODEL: base} if isinstance(base, str) else shown, repo_id=repo_id)
    if repo_id is not None:
        from crossner_hf.publishing.hub import push_to_hub

        push_to_hub(folder, repo_id, repo_type="model", private=bool(getattr(push, "hub_private_repo", False)),
                    token=getattr(push, "hub_token", None))  # hub.RUN_IGNORE_PATTERNS, as `crossner-hf push`
    return folder
