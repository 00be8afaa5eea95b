"""The route of a ``train`` run through the package: the ``crossner_hf`` modules entered, in order, from the command
(``commands/train.py:main``, given its parsed flags) to the ``Trainer`` and back to the written card (issue 55's measure
of the main hallway).

A ``sys.setprofile`` hook records each call from one ``crossner_hf`` module into another (the command's own entry
counts as the first). Calls made by a library (the ``Trainer`` calling our callbacks, ``datasets`` calling our map
functions), and every call made while such a library runs, are its work, not hallway steps, and are not counted;
neither are calls within one module. It runs one tiny
``train`` (a random 2-layer BERT, 2 steps, CrossNER politics through ``CROSSNER_DATA_DIR``, parsed into a cache
of the run's own before the trace, so every machine traces the same route) and prints the route,
each module's entries and the totals.

    python benchmarks/train_route.py            # the route, then "N modules entered, at most K times (module)"
    python benchmarks/train_route.py --max_entries 3 --max_modules 12   # exit 1 when over
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path


LIBRARIES = ("transformers.", "datasets.", "accelerate.", "torch.", "evaluate.", "seqeval.", "huggingface_hub.")
"""Calls made while one of these runs (the Trainer's loop and its callbacks, a dataset's map) are its work, not a
step of our hallway."""


def trace_route(argv: list[str], calls: list[str] | None = None) -> list[str]:
    """The ``crossner_hf`` modules entered, in order, while the ``train`` command runs ``crossner-hf ARGV`` in this
    process (each entry's ``caller.function -> callee.function`` appended to ``calls`` when given).

    The route starts where the issue's reading starts, at the command (``commands/train.py:main``) with its parsed
    arguments: the flags are parsed first, by the command's own parser, outside the trace."""
    import logging

    from crossner_hf.commands.train import main as train_main
    from crossner_hf.commands.train import make_parser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if argv[0] != "train":
        raise SystemExit(f"this script traces the train command, not {argv[0]!r}")
    parsed = make_parser().parse_args_and_config(argv[1:])  # (TrainArguments, FinetuneConfig)

    def main(_argv: list[str]) -> int:
        return train_main(*parsed)

    route: list[str] = []

    def module_of(frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.startswith("crossner_hf") else None

    def inside_library(frame) -> bool:
        while frame is not None:
            if frame.f_globals.get("__name__", "").startswith(LIBRARIES):
                return True
            frame = frame.f_back
        return False

    def hook(frame, event, arg):
        if event != "call":
            return
        callee = module_of(frame)
        if callee is None or frame.f_back is None:
            return
        caller = module_of(frame.f_back)
        if caller is None and route:  # a library calling back into us: not a step of the hallway
            return
        if inside_library(frame.f_back):  # the Trainer's loop (its metrics, callbacks), a dataset's map: the work
            return
        if caller != callee and (not route or route[-1] != callee):
            route.append(callee)
            if calls is not None:
                calls.append(f"{caller}.{frame.f_back.f_code.co_name} -> {callee}.{frame.f_code.co_name}")

    sys.setprofile(hook)
    try:
        code = main(argv)
    finally:
        sys.setprofile(None)
    if code:
        raise SystemExit(f"crossner-hf {' '.join(argv)} exited with {code}")
    return route


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_entries", type=int, default=None, help="Exit 1 when a module is entered more often.")
    parser.add_argument("--max_modules", type=int, default=None, help="Exit 1 when more modules are entered.")
    parser.add_argument("--calls", action="store_true", help="Also print each entry as caller.function -> "
                        "callee.function.")
    args = parser.parse_args()
    from crossner_hf.testing import make_tiny_bert

    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_bert(str(Path(tmp) / "tiny"))
        # the same route on every machine: the CrossNER files parsed into a cache of this run's own before the
        # trace (a second run's route; a first run also enters the CoNLL reader and the columns' rules to parse)
        os.environ["CROSSNER_HF_CACHE"] = str(Path(tmp) / "cache")
        from crossner_hf.data.target import load_target

        load_target("politics")
        calls: list[str] = []
        route = trace_route(["train", "--domain", "politics", "--model_name_or_path", str(model), "--max_steps", "2",
                             "--per_device_train_batch_size", "4", "--few_shot", "8", "--use_cpu", "true",
                             "--disable_tqdm", "true", "--output_dir", str(Path(tmp) / "run")], calls)
    entries = Counter(route)
    if args.calls:
        print("entries:")
        for n, call in enumerate(calls, 1):
            print(f"  {n:3d}  {call.replace('crossner_hf.', '')}")
    print("route (the politics files already parsed):", " -> ".join(m.removeprefix("crossner_hf.") for m in route))
    print("\nentries per module:")
    for module, n in entries.most_common():
        print(f"  {n:3d}  {module}")
    worst, most = entries.most_common(1)[0]
    print(f"\n{len(entries)} modules entered, {len(route)} entries, at most {most} times ({worst})")
    over = (args.max_entries is not None and most > args.max_entries) or \
        (args.max_modules is not None and len(entries) > args.max_modules)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
