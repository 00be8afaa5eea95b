"""CDLM Table 4's zero-shot baselines on the BiLSTM-CRF: SELF-TRAIN and DANN (004:1087-1094).

Neither reads a target label: both train on CoNLL-2003 (tags mapped into the target label list by
name), use the target's raw text (``--target_text``, else its training sentences as text) and select
the model on CoNLL-2003's dev set, as the zero-shot CDLM does. The paper names the methods and cites
them (SELF-TRAIN: Daumé III 2008; DANN: Ganin et al. 2016); no code for them was released, so the
procedures below are this project's reading (``docs/fidelity.md``):

- **SELF-TRAIN**: round 0 is STM-SOURCE; each further round tags the target text with the previous
  round's best model, keeps the ``self_train_fraction`` x round most confident sentences (Viterbi path
  probability per word under the CRF) with their predicted tags, and continues training on CoNLL-2003
  plus those sentences for ``self_train_epochs``.
- **DANN**: each step adds to the CRF loss of a CoNLL-2003 batch the cross-entropy of a domain classifier
  (one hidden layer over each sentence's mean BiLSTM state) on a batch of source raw text (``--source_text``,
  the paper's Reuters sentences; without it the CoNLL-2003 batch itself) and on a batch of target text,
  through a gradient reversal of strength ``dann_weight`` x (2 / (1 + e^(-10 p)) - 1), p the share of training
  done (Ganin et al.'s schedule). The paper trains the classifier over both domains' raw data (004:1100-1103),
  a selection of it (004:1127-1128: how it was selected is not said; the texts given are read whole).

Rounds and the DANN run are resumable like every RNN run (``OUT/round-K/checkpoint``, ``OUT/checkpoint``).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from crossner_hf.modeling.rnn.vocab import WordCharVocab
from crossner_hf.training.rnn.common import finish_run
from crossner_hf.outputs import read_json
from crossner_hf.training.rnn.loop import (Example, LoopState, Stream, evaluate, make_optimizer_factory, run_loop,
                                           tensors)

logger = logging.getLogger(__name__)


@torch.no_grad()
def confident(model, vocab: WordCharVocab, sentences: list[Example], keep: int, batch_size: int = 64
              ) -> list[Example]:
    """The ``keep`` sentences the model tags most confidently (CRF probability of its Viterbi path, per word),
    with its tags, in the order of ``sentences``."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    scored: list[tuple[float, int, list[int]]] = []
    for start in range(0, len(sentences), batch_size):
        batch = sentences[start:start + batch_size]
        words, chars, mask = (t.to(device) for t in vocab.encode([e.tokens for e in batch]))
        emissions = model.emissions(words, chars, mask)
        paths = model.crf.decode(emissions, mask)
        tags = torch.zeros_like(words)
        for b, path in enumerate(paths):
            tags[b, : len(path)] = torch.tensor(path)
        per_word = model.crf(emissions, tags, mask) / mask.sum(1)
        scored += [(float(s), start + b, paths[b]) for b, s in enumerate(per_word)]
    model.train(was)
    best = sorted(scored, key=lambda x: (-x[0], x[1]))[:keep]
    return [Example(sentences[i].tokens, path) for _, i, path in sorted(best, key=lambda x: x[1])]


def _step(vocab):
    def step(m, batches, device):
        return m(**tensors(vocab, batches["train"], device)).loss
    return step


def self_train(args, model, vocab, labels, source: list[Example], target_text: list[Example], dev, test,
               started: float, data: dict[str, Any]) -> dict[str, Any]:
    """SELF-TRAIN: STM-SOURCE, then ``args.self_train_rounds`` rounds adding confidently tagged target text;
    ``data``: the dataset record (results.json's, and part of each round's identity)."""
    out = Path(args.output_dir)
    model_cls = type(model)
    history = []
    last_state = None
    for k in range(args.self_train_rounds + 1):
        folder = out / f"round-{k}"
        done = folder / "round.json"
        if done.is_file():
            history.append(read_json(done))
            continue
        pseudo: list[Example] = []
        round_args = replace(args, output_dir=str(folder))
        if k:
            model = model_cls.from_pretrained(out / f"round-{k - 1}" / "best")
            keep = min(len(target_text), math.ceil(args.self_train_fraction * k * len(target_text)))
            pseudo = confident(model, vocab, target_text, keep)
            round_args = replace(round_args, num_train_epochs=args.self_train_epochs)
        stream = Stream(source + pseudo, args.batch_size, args.seed + k)
        state = run_loop(model=model, vocab=vocab, streams={"train": stream}, step_losses=_step(vocab),
                         make_optimizer=make_optimizer_factory(round_args), args=round_args, identity=data,
                         dev_eval=lambda m: evaluate(m, vocab, dev, labels)["overall_f1"], output_dir=folder,
                         steps_per_epoch=stream.batches_per_pass())
        record = {"round": k, "pseudo_labelled": len(pseudo), "best_dev_f1": state.best_f1, "epochs": state.epoch,
                  "steps": state.global_step}
        done.write_text(json.dumps(record))
        history.append(record)
        logger.info("self-training round %d: %d target sentences added, source dev F1 %.2f", k, len(pseudo),
                    100 * state.best_f1)
        last_state = state
    if last_state is None:  # every round was done before: the last one's record stands for its state
        last = history[-1]
        last_state = LoopState(epoch=last["epochs"], best_f1=last["best_dev_f1"], best_epoch=-1, history=[],
                               global_step=last["steps"])
    return finish_run(model_cls, args, vocab, labels, test, out, last_state, started,
                      {"model": "bilstm-crf", "self_training": history, "n_train_sentences": len(source), **data},
                      best_dir=out / f"round-{args.self_train_rounds}" / "best")


def dann(args, model, vocab, labels, source: list[Example], target_text: list[Example], dev, test,
         started: float, data: dict[str, Any], source_text: list[Example] | None = None) -> dict[str, Any]:
    """DANN: the CRF loss on CoNLL-2003 plus an adversarial source-vs-target classifier through gradient reversal;
    the classifier's source side reads ``source_text`` when given, else the CoNLL-2003 batch."""
    out = Path(args.output_dir)
    streams = {"train": Stream(source, args.batch_size, args.seed),
               "target_text": Stream(target_text, args.batch_size, args.seed + 1)}
    if source_text:  # a stream of its own: the raw text is not the NER data and has its own size
        streams["source_text"] = Stream(source_text, args.batch_size, args.seed + 2)
        data = {**data, "source_text": len(source_text)}  # part of the identity: a resume reads the same text
    steps_per_epoch = streams["train"].batches_per_pass()
    per_epoch = min(steps_per_epoch, args.max_steps_per_epoch or steps_per_epoch)
    total = args.max_steps if args.max_steps > 0 else per_epoch * args.num_train_epochs

    def step(m, batches, device):
        inner = getattr(m, "module", m)
        src = tensors(vocab, batches["train"], device)
        tgt = tensors(vocab, [Example(e.tokens, None) for e in batches["target_text"]], device)
        progress = min(1.0, streams["target_text"].position / max(total, 1))  # positions resume with the run
        reversal = args.dann_weight * (2 / (1 + math.exp(-10 * progress)) - 1)
        if "source_text" in batches:
            features = tensors(vocab, batches["source_text"], device)  # raw text: untagged examples
        else:
            features = {k: src[k] for k in ("word_ids", "char_ids", "attention_mask")}
        logits = torch.cat([inner.domain_logits(**features, reversal=reversal),
                            inner.domain_logits(**tgt, reversal=reversal)])
        n_source = len(batches.get("source_text", batches["train"]))
        domains = torch.cat([torch.zeros(n_source), torch.ones(len(batches["target_text"]))]).long()
        return m(**src).loss + torch.nn.functional.cross_entropy(logits, domains.to(logits.device))

    state = run_loop(model=model, vocab=vocab, streams=streams, step_losses=step,
                     make_optimizer=make_optimizer_factory(args), args=args, identity=data,
                     dev_eval=lambda m: evaluate(m, vocab, dev, labels)["overall_f1"], output_dir=out,
                     steps_per_epoch=steps_per_epoch)
    return finish_run(type(model), args, vocab, labels, test, out, state, started,
                      {"model": "bilstm-crf", "n_train_sentences": len(source), "n_target_text": len(target_text),
                       "n_source_text": len(source_text) if source_text else None, **data})
