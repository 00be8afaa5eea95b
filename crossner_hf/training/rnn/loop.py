"""Training BiLSTM-CRF and CDLM on CrossNER: a multi-stream loop on Accelerate, evaluation, resume.

Why not ``transformers.Trainer``: a CDLM step draws four batches of different kinds (source
NER, source text, target NER, target text), runs four (domain, task) configurations of the
generated LSTM, sums their weighted losses and takes one optimiser step; zero-shot training
switches optimiser (RMSprop to SGD) when source dev F1 passes a threshold, and the learning
rate decays per epoch as lr / (1 + decay x epoch). Trainer's one-batch-one-loss loop with a
fixed optimiser does not fit, so this is a plain loop on Accelerate: the model and every optimiser
go through ``accelerator.prepare_*``, the forward runs under ``accelerator.autocast()``
(``--mixed_precision bf16|fp16``), ``backward`` and clipping are Accelerate's. One process: several
are refused with a message (the streams are drawn by position from seeded orders, which sharding
would change; the models are small).

Defaults are the releases' (see ``docs/fidelity.md``): CDLM as NCRF++ runs it (SGD lr 0.015,
decay 0.05, weight decay 1e-8, batch 30, zero-shot 10 starting with RMSprop, no clipping, loss
weights by LM text source), the CrossNER BiLSTM-CRF with Adam 1e-3; model selection on the
target dev F1 (zero-shot: source dev F1). Documented deviations: the target NER set is *cycled*
with its own batch size (the release's N_target / n_batches is 0 for 100-200 sentences);
training stops after ``early_stopping_patience`` epochs without a better dev F1 (the CDLM
release ran all epochs and kept the best, which this keeps too); ``max_steps`` caps the total.

Checkpoints: ``OUT/checkpoint/`` after every epoch (model, optimiser, RNG states, history);
``resume_from_checkpoint`` continues from there and reaches the same result as an
uninterrupted run (batch order is a function of seed and epoch).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from crossner_hf.evaluation.metrics import compute_ner_metrics
from crossner_hf.inference.rnn_tagger import RNNTagger
from crossner_hf.modeling.rnn.cdlm import LM, NER, SOURCE, TARGET
from crossner_hf.modeling.rnn.vocab import WordCharVocab
from crossner_hf.training.runs import wants_resume

logger = logging.getLogger(__name__)


@dataclass
class Example:
    tokens: list[str]
    tags: list[int] | None  # None: text only (LM streams, and target NER in zero-shot mode)


class Stream:
    """Endless batches over ``examples``, reshuffled each pass with ``(seed, pass)``: resumable by position."""

    def __init__(self, examples: Sequence[Example], batch_size: int, seed: int):
        if not examples:
            raise ValueError("Stream: no examples.")
        self.examples, self.batch_size, self.seed = list(examples), batch_size, seed
        self.position = 0  # batches drawn so far

    def batches_per_pass(self) -> int:
        return max(1, -(-len(self.examples) // self.batch_size))

    def next(self) -> list[Example]:
        per_pass = self.batches_per_pass()
        epoch, k = divmod(self.position, per_pass)
        order = np.random.default_rng([self.seed, epoch]).permutation(len(self.examples))
        self.position += 1
        return [self.examples[i] for i in order[k * self.batch_size:(k + 1) * self.batch_size]]


def tensors(vocab: WordCharVocab, batch: Sequence[Example], device) -> dict[str, torch.Tensor]:
    words, chars, mask = vocab.encode([e.tokens for e in batch])
    out = {"word_ids": words.to(device), "char_ids": chars.to(device), "attention_mask": mask.to(device)}
    if batch and batch[0].tags is not None:
        labels = torch.zeros_like(words)
        for b, e in enumerate(batch):
            labels[b, : len(e.tags)] = torch.tensor(e.tags)
        out["labels"] = labels.to(device)
    return out


@torch.no_grad()
def evaluate(model, vocab: WordCharVocab, examples: Sequence[Example], label_names: Sequence[str], *,
             domain: int | None = None, crf_domain: int | None = None, batch_size: int = 64,
             gold_names: Sequence[str] | None = None) -> dict[str, Any]:
    """CRF-decoded predictions scored with the project's metric (conlleval-convention seqeval).

    ``label_names`` name the predicted ids, ``gold_names`` (default: the same) the gold ids:
    zero-shot tagging predicts source tags for target sentences.
    """
    kwargs = {} if domain is None else {"domain": domain, "crf_domain": crf_domain}
    # the tagging path `predict` and `report` use for a saved folder (crossner_hf.inference.tagger.Tagger)
    pred = RNNTagger.from_model(model, vocab, label_names, kwargs).tag([e.tokens for e in examples], batch_size)
    names = gold_names if gold_names is not None else label_names
    gold = [[names[t] for t in e.tags] for e in examples]
    return compute_ner_metrics(gold, pred) | {"predictions": pred}


def set_lr(optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def _rng_state() -> dict[str, Any]:
    """The three generators' states as tensors and plain numbers only, so the checkpoint loads with
    ``torch.load(weights_only=True)`` (no pickle: a received checkpoint cannot run code)."""
    version, words, gauss = random.getstate()
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    return {"torch": torch.get_rng_state(),
            "python": {"version": version, "words": torch.tensor(words, dtype=torch.int64), "gauss": gauss},
            "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                      "has_gauss": int(has_gauss), "cached": float(cached)}}


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    py = state["python"]
    random.setstate((py["version"], tuple(int(w) for w in py["words"].tolist()), py["gauss"]))
    npy = state["numpy"]
    np.random.set_state((npy["kind"], npy["keys"].numpy().astype(np.uint32), npy["pos"], npy["has_gauss"],
                         npy["cached"]))


CHECKPOINT_FILE = "state.pt"


def load_checkpoint(path: Path) -> dict[str, Any]:
    """A loop checkpoint, read with ``weights_only=True``: tensors and plain containers only. A file holding
    anything else (a pickled object, which could run code as it loads) is refused in one line."""
    import pickle

    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as err:
        first = str(err).strip().splitlines()[0][:160]
        raise ValueError(f"{path}: not a checkpoint of ours: it holds objects a safe load refuses ({first}); it was "
                         "not loaded. Delete it (or the folder) and train afresh without --resume_from_checkpoint."
                         ) from None
    except (RuntimeError, EOFError) as err:
        raise ValueError(f"{path}: unreadable checkpoint ({type(err).__name__}); delete it and train afresh.") from None


def save_checkpoint(payload: dict[str, Any], path: Path) -> None:
    """Write to a temporary name beside ``path`` and rename: a kill leaves the previous checkpoint whole."""
    from crossner_hf.outputs import atomic_output

    with atomic_output(path) as tmp:
        torch.save(payload, tmp)


def recover_best(folder: Path) -> None:
    """After a kill inside :func:`save_best`'s swap (between its two renames), put the previous best back."""
    old = folder.with_name(f".{folder.name}.old")
    if not folder.exists() and old.is_dir():
        old.rename(folder)


def save_best(model: Any, vocab: WordCharVocab, folder: Path) -> None:
    """The best model so far, replaced as a whole (written beside, then swapped): a kill mid-save leaves the
    previous best, never a mix."""
    import shutil

    recover_best(folder)
    staging = folder.with_name(f".{folder.name}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    vocab.save(staging)
    from crossner_hf.outputs import usual_modes

    usual_modes(staging)  # save_pretrained leaves 0600: a teammate reads each run's best model too
    old = folder.with_name(f".{folder.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


@dataclass
class LoopState:
    epoch: int = 0
    best_f1: float = -1.0
    best_epoch: int = -1
    bad_epochs: int = 0
    optimizer_name: str = "sgd"
    history: list | None = None
    global_step: int = 0


EXTENDABLE = ("num_train_epochs", "max_steps")
"""Settings a resume of the RNN loop may change: the budget."""


def run_loop(*, identity: dict[str, Any] | None = None, **kwargs: Any) -> LoopState:
    """:func:`_run_loop` holding ``output_dir``'s lock (a second live run into it is refused), after checking
    that a resume continues the run its folder holds (the settings that decide the result are recorded, with
    ``identity``: what the config does not hold, such as the dataset)."""
    from crossner_hf.outputs import claimed_output_dir, decisive_settings

    args = kwargs["args"]
    # the loop's per-epoch schedule does not depend on the budget, so a resume may extend the epochs or steps
    # (and reaches what a run given that budget from the start reaches); everything else must match
    settings = {**{k: v for k, v in asdict(args).items() if k not in EXTENDABLE}, **(identity or {})}
    with claimed_output_dir(kwargs["output_dir"], decisive_settings(settings),
                            resume=wants_resume(args.resume_from_checkpoint),
                            overwrite=bool(getattr(args, "overwrite_output_dir", False)), stale=("checkpoint",)):
        return _run_loop(**kwargs)


def _run_loop(
    *, model, vocab: WordCharVocab, streams: dict[str, Stream], step_losses, make_optimizer, args,
    dev_eval, output_dir: Path, steps_per_epoch: int, switch_optimizer=None,
) -> LoopState:
    """The epoch loop shared by both models: steps, lr decay, dev selection, checkpoints, resume.

    ``step_losses(model, batches) -> loss`` computes one step's weighted loss from one batch
    per stream; ``dev_eval(model) -> f1`` scores the selection split; ``switch_optimizer``
    (zero-shot) may return a new optimiser name after an evaluation.
    """
    from accelerate import Accelerator

    accelerator = Accelerator(cpu=args.use_cpu, mixed_precision=args.mixed_precision)
    if accelerator.num_processes > 1:
        # the four streams are drawn by position from one seeded order per stream; sharding them across
        # processes would change what a step sees and break exact resume, and these models are small
        raise ValueError(f"The RNN recipes run in one process (got {accelerator.num_processes}); start them with "
                         "`crossner-hf bilstm-crf|cdlm ...` or `accelerate launch --num_processes 1 ...`.")
    model = accelerator.prepare_model(model)
    state = LoopState(optimizer_name=args.initial_optimizer, history=[])

    def prepared_optimizer(name: str):
        return accelerator.prepare_optimizer(make_optimizer(model, name))

    optimizer = prepared_optimizer(state.optimizer_name)
    ckpt = output_dir / "checkpoint"
    if wants_resume(args.resume_from_checkpoint) and (ckpt / CHECKPOINT_FILE).is_file():
        saved = load_checkpoint(ckpt / CHECKPOINT_FILE)
        recover_best(output_dir / "best")
        model.load_state_dict(saved["model"])
        state = LoopState(**saved["loop"])
        optimizer = prepared_optimizer(state.optimizer_name)
        optimizer.load_state_dict(saved["optimizer"])
        for name, pos in saved["streams"].items():
            streams[name].position = pos
        _set_rng_state(saved["rng"])
        logger.info("Resumed at epoch %d from %s", state.epoch, ckpt)
    model.train()
    while (state.epoch < args.num_train_epochs and state.bad_epochs < (args.early_stopping_patience or 10**9)
           and (args.max_steps <= 0 or state.global_step < args.max_steps)):
        started = time.perf_counter()
        set_lr(optimizer, epoch_learning_rate(args, state.optimizer_name, state.epoch))
        total = 0.0
        steps = steps_per_epoch if args.max_steps_per_epoch is None else min(steps_per_epoch, args.max_steps_per_epoch)
        if args.max_steps > 0:  # the last epoch of a --max_steps budget may be partial
            steps = min(steps, args.max_steps - state.global_step)
        for _ in range(steps):
            batches = {name: s.next() for name, s in streams.items()}
            optimizer.zero_grad()
            with accelerator.autocast():
                loss = step_losses(model, batches, accelerator.device)
            accelerator.backward(loss)
            if args.max_grad_norm:
                accelerator.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            optimizer.step()
            state.global_step += 1
            total += float(loss.detach())
        f1 = dev_eval(model)
        state.epoch += 1
        improved = f1 > state.best_f1
        if improved:
            state.best_f1, state.best_epoch, state.bad_epochs = f1, state.epoch, 0
            save_best(accelerator.unwrap_model(model), vocab, output_dir / "best")
        else:
            state.bad_epochs += 1
        state.history.append({"epoch": state.epoch, "loss": total / max(steps, 1), "dev_f1": f1,
                              "seconds": time.perf_counter() - started, "optimizer": state.optimizer_name})
        logger.info("epoch %d: loss %.3f, dev F1 %.2f%s", state.epoch, total / max(steps, 1), 100 * f1,
                    " (best)" if improved else "")
        from crossner_hf.training.progress import write_epoch_progress  # a grid cell's progress.json

        write_epoch_progress(output_dir, state.history, state.global_step, args.max_steps if args.max_steps > 0
                             else steps_per_epoch * int(args.num_train_epochs))
        if switch_optimizer is not None:
            new = switch_optimizer(state.optimizer_name, f1)
            if new != state.optimizer_name:
                logger.info("Switching optimiser %s -> %s at dev F1 %.2f", state.optimizer_name, new, 100 * f1)
                state.optimizer_name = new
                optimizer = prepared_optimizer(new)
        ckpt.mkdir(parents=True, exist_ok=True)
        save_checkpoint({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "loop": asdict(state),
                         "streams": {n: s.position for n, s in streams.items()}, "rng": _rng_state()},
                        ckpt / CHECKPOINT_FILE)
    return state


def make_optimizer_factory(args):
    """``make(model, name)`` for sgd (NCRF++), adam (the CrossNER release) and rmsprop (CDLM zero-shot start)."""

    def make(model, name: str):
        params = [p for p in model.parameters() if p.requires_grad]
        if name == "rmsprop":
            return torch.optim.RMSprop(params, lr=args.rmsprop_learning_rate, weight_decay=args.weight_decay)
        if name == "adam":
            return torch.optim.Adam(params, lr=args.learning_rate, weight_decay=args.weight_decay)
        return torch.optim.SGD(params, lr=args.learning_rate, weight_decay=args.weight_decay)

    return make


def epoch_learning_rate(args, optimizer_name: str, epoch: int) -> float:
    """SGD decays as lr / (1 + decay x epoch) (NCRF++); Adam and RMSprop keep a constant rate."""
    if optimizer_name == "sgd":
        return args.learning_rate / (1 + args.lr_decay * epoch)
    return args.rmsprop_learning_rate if optimizer_name == "rmsprop" else args.learning_rate


CDLM_STREAMS = (("source_ner", SOURCE, NER, 1), ("source_text", SOURCE, LM, 0), ("target_text", TARGET, LM, 2),
                ("target_ner", TARGET, NER, 3))
"""(stream, domain, task, index of its weight in ``--loss_weights``), in the order a step computes them."""


def cdlm_step(weights: Sequence[float], zero_shot: bool, vocab: WordCharVocab):
    """One CDLM step: the weighted losses of the streams a batch holds (all four for the paper's model;
    an ablation drops some), in the order of :data:`CDLM_STREAMS`; zero-shot never reads target labels."""

    def step(model, batches, device):
        loss = None
        for name, domain, task, k in CDLM_STREAMS:
            if name not in batches or (zero_shot and name == "target_ner"):
                continue
            batch = batches[name] if task == NER else [Example(e.tokens, None) for e in batches[name]]
            term = weights[k] * model(**tensors(vocab, batch, device), domain=domain, task=task).loss
            loss = term if loss is None else loss + term
        return loss

    return step

