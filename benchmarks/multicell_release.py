"""Benchmark and check: our multi-cell compositional LSTM direction against the release's ``MultiCellLSTM``.

The release (jiachenwestlake/Multi-Cell_LSTM, ``SDA/model/MultiCell_LSTM_compose.py``) is not shipped
here: give its checkout with ``--release_dir``. The script loads that one file, copies the weights of
a :class:`~crossner_hf.modeling.rnn.multicell.MultiCellDirection` into the release's module (each
cell's ``nn.Linear`` from our stacked tensors), runs both on the same padded batch and prints

- the largest difference of hidden states, entity-cell states and attention, per direction and
  domain (valid positions only: the release's padding is computed in another order);
- the parameter count of one direction beside the release's, at the paper's sizes;
- forward and forward+backward time per batch, ours beside the release's (median of round-robin
  repeats, ratios are the figures to read on a shared machine).

One known difference is mapped, not hidden: the release's source-domain attention projects the
entity cells with the *query* projection (``cell_proj = self.input_proj_S``); ours has a key
projection per domain. The check copies the release's query projection into our source key, so the
comparison covers the arithmetic; ``docs/fidelity.md`` records the choice.

Run: python benchmarks/multicell_release.py --release_dir PATH/Multi-Cell_LSTM [--repeats 10]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

from crossner_hf.modeling.rnn.cdlm import SOURCE, TARGET
from crossner_hf.modeling.rnn.multicell import MultiCellDirection

RELEASE_FILE = Path("SDA") / "model" / "MultiCell_LSTM_compose.py"
DOMAIN_TAGS = {SOURCE: "Source", TARGET: "Target"}


def load_release(release_dir: Path):
    """The release's module, loaded from its file (it imports only torch and numpy)."""
    path = release_dir / RELEASE_FILE
    if not path.is_file():
        raise SystemExit(f"--release_dir {release_dir}: no {RELEASE_FILE} there; give the root of a "
                         "jiachenwestlake/Multi-Cell_LSTM checkout.")
    spec = importlib.util.spec_from_file_location("multicell_release", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def masks(num_cells: int, cells: dict[int, list[int]]) -> dict[int, list[int]]:
    return {domain: [int(k in idx) for k in range(num_cells)] for domain, idx in cells.items()}


def build_pair(release, input_size: int, hidden: int, cells: dict[int, list[int]], reverse: bool, seed: int = 0):
    """Our direction with distinct random weights, and the release's module holding the same weights."""
    torch.manual_seed(seed)
    num_cells = 1 + max(max(c) for c in cells.values())
    ours = MultiCellDirection(input_size, hidden, num_cells, reverse=reverse)
    with torch.no_grad():  # break the identical initial copies, so that a wrong cell index shows
        for p in ours.parameters():
            p.add_(0.1 * torch.randn_like(p))
        ours.key[SOURCE].weight.copy_(ours.query[SOURCE].weight)  # the release's source attention (see above)
    m = masks(num_cells, cells)
    theirs = release.MultiCellLSTM(input_size, hidden, num_cells, m[SOURCE], m[TARGET], left2right=not reverse,
                                   gpu=False)
    layer = theirs.layer
    with torch.no_grad():
        for k in range(num_cells):
            layer.compute_gate.cell_list_x[k].weight.copy_(ours.cell_x[k].T)
            layer.compute_gate.cell_list_x[k].bias.copy_(ours.cell_bias[k])
            layer.compute_gate.cell_list_h[k].weight.copy_(ours.cell_h[k].T)
        layer.composition_cell.input_x.load_state_dict(ours.compose_x.state_dict())
        layer.composition_cell.input_h.load_state_dict(ours.compose_h.state_dict())
        attention = layer.compute_atten
        attention.input_proj_S.load_state_dict(ours.query[SOURCE].state_dict())
        attention.input_proj_T.load_state_dict(ours.query[TARGET].state_dict())
        attention.cell_proj_T.load_state_dict(ours.key[TARGET].state_dict())
        attention.atten_v_S.copy_(ours.v[SOURCE])
        attention.atten_v_T.copy_(ours.v[TARGET])
    return ours, theirs


def batch(size: int, steps: int, input_size: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, steps + 1, (size,), generator=g)
    lengths[0] = steps
    x = torch.randn(size, steps, input_size, generator=g)
    mask = torch.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)
    return x * mask.unsqueeze(-1), lengths, mask


def compare(release, input_size: int, hidden: int, cells: dict[int, list[int]]) -> list[tuple[str, float, float, float]]:
    """Largest |ours - release| of hidden, cell states and attention at valid positions, per direction and domain."""
    rows = []
    x, lengths, mask = batch(8, 12, input_size)
    for reverse in (False, True):
        ours, theirs = build_pair(release, input_size, hidden, cells, reverse)
        for domain, idx in cells.items():
            with torch.no_grad():
                h, c, p = ours(x, lengths, torch.tensor(idx), domain)
                rh, rc, rp = theirs(DOMAIN_TAGS[domain], x, mask)
            # the release orders a domain's cells by index; ours by the domain's label order: align them
            order = [sorted(idx).index(k) for k in idx]
            rc, rp = rc[:, :, order], rp[:, :, order]
            valid = mask.unsqueeze(-1)
            rows.append((f"{'backward' if reverse else 'forward'} / {DOMAIN_TAGS[domain].lower()}",
                         float(((h - rh) * valid).abs().max()), float(((c - rc) * valid.unsqueeze(-1)).abs().max()),
                         float(((p - rp) * valid).abs().max())))
    return rows


def count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def timing(release, input_size: int, hidden: int, cells: dict[int, list[int]], repeats: int,
           size: int, steps: int) -> dict[str, float]:
    ours, theirs = build_pair(release, input_size, hidden, cells, reverse=False)
    x, lengths, mask = batch(size, steps, input_size)
    idx = torch.tensor(cells[TARGET])

    def ours_fwd():
        with torch.no_grad():
            ours(x, lengths, idx, TARGET)

    def theirs_fwd():
        with torch.no_grad():
            theirs("Target", x, mask)

    def ours_bwd():
        h, c, p = ours(x, lengths, idx, TARGET)
        (h.sum() + c.sum() + p.sum()).backward()

    def theirs_bwd():
        h, c, p = theirs("Target", x, mask)
        (h.sum() + c.sum() + p.sum()).backward()

    fns = {"ours forward": ours_fwd, "release forward": theirs_fwd,
           "ours forward+backward": ours_bwd, "release forward+backward": theirs_bwd}
    times: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():  # warm-up
        fn()
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {k: 1000 * statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--release_dir", type=Path, required=True,
                        help="root of a jiachenwestlake/Multi-Cell_LSTM checkout (holds SDA/model/)")
    parser.add_argument("--repeats", type=int, default=10, help="timed repeats per module (median reported)")
    parser.add_argument("--tolerance", type=float, default=1e-5, help="largest difference accepted (exit 1 above)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    release = load_release(args.release_dir)

    # politics ∪ CoNLL-2003 as the recipe builds it: 10 cells, CoNLL's 5 (O + 4 types) and politics' 10
    cells = {SOURCE: [0, 1, 2, 3, 4], TARGET: [0, 1, 5, 6, 7, 8, 9, 2, 3, 4]}
    print("Equality with the release's MultiCellLSTM (8 sentences of 1-12 words, hidden 100, input 150)")
    print("| direction / domain | hidden | entity cells | attention |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for name, *diffs in compare(release, 150, 100, cells):
        worst = max(worst, *diffs)
        print(f"| {name} | {diffs[0]:.1e} | {diffs[1]:.1e} | {diffs[2]:.1e} |")

    print("\nParameters of one direction, 10 cells, hidden 100 (ours = the release's module)")
    print("| input | ours | release |")
    print("|---|---:|---:|")
    for input_size, what in ((150, "GloVe 100 + char CNN 50"), (918, "+ bert-base 768")):
        ours, theirs = build_pair(release, input_size, 100, cells, reverse=False)
        print(f"| {input_size} ({what}) | {count(ours):,} | {count(theirs):,} |")
        if count(ours) != count(theirs):
            worst = float("inf")

    size, steps = 10, 30
    t = timing(release, 150, 100, cells, args.repeats, size, steps)
    print(f"\nTime per batch of {size} sentences x {steps} words, target domain (10 cells), 1 thread, "
          f"median of {args.repeats} (ms)")
    print("| pass | ours | release | speed-up |")
    print("|---|---:|---:|---:|")
    for op in ("forward", "forward+backward"):
        a, b = t[f"ours {op}"], t[f"release {op}"]
        print(f"| {op} | {a:.1f} | {b:.1f} | {b / a:.2f}x |")
    if worst > args.tolerance:
        print(f"\nFAILED: a difference of {worst:.2e} is above --tolerance {args.tolerance:g}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
