"""The route of a ``train`` run through the package's rooms: from the command (``commands/train.py:main``, given its
parsed flags) to the ``Trainer`` and back to the written card, each call that crosses from one room into another
(issue 55's measure of the main hallway, made a measure of the back and forth between rooms by issue 64).

A room is a layer of ``tests/test_layers.py`` (``LAYERS``, the one list: ``base``, ``data``, ``modeling``,
``training``, ``publishing``, ``commands``, ...). A ``sys.setprofile`` hook records each call from a function of one
``crossner_hf`` module into a function of another (the command's own entry counts as the first), once per pair of
functions. Calls made by a library (the ``Trainer`` calling our callbacks, ``datasets`` calling our map functions),
and every call made while such a library runs, are its work, not hallway steps, and are not counted; neither are
calls within one module. What is measured is the doors the run walks through: the pairs of functions whose call
crosses from one room into another. Merging modules changes none of it (a call between two modules of one room
crosses no door, before or after; a call across rooms is the same pair of functions); a call into a room *above*
its caller's (a callback handed down and called back up) is an arrow up, and the house has none.

It runs one tiny ``train`` (a random 2-layer BERT, 2 steps, CrossNER politics through ``CROSSNER_DATA_DIR``, parsed
into a cache of the run's own before the trace, so every machine traces the same route) and prints the rooms in
the order the run walks them, each room's entries, the crossings and any arrow up.

    python benchmarks/train_route.py            # the rooms, then "N crossings between R rooms, U up"
    python benchmarks/train_route.py --max_crossings 16   # exit 1 when over, or when any crossing goes up
    python benchmarks/train_route.py --calls    # also each call: caller.function -> callee.function
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]

LIBRARIES = ("transformers.", "datasets.", "accelerate.", "torch.", "evaluate.", "seqeval.", "huggingface_hub.")
"""Calls made while one of these runs (the Trainer's loop and its callbacks, a dataset's map) are its work, not a
step of our hallway."""


@functools.cache
def _layers():
    """``tests/test_layers.py``, the one home of the layers' order and of which layer a module is in."""
    spec = importlib.util.spec_from_file_location("test_layers_spec", ROOT / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Step(NamedTuple):
    """A function of one ``crossner_hf`` module calling a function of another (``caller`` is ``None`` for the
    command's entry), as first seen."""

    caller: str | None
    callee: str
    caller_function: str
    callee_function: str


def room_of(module: str) -> str:
    """The room (layer) of a ``crossner_hf`` module: ``training`` for ``crossner_hf.training.runs``, ``base`` for
    ``crossner_hf.outputs``."""
    return _layers()._layer(module)


def crossings(route: list[Step]) -> list[tuple[str, str]]:
    """``(caller room, callee room)`` of each pair of functions whose call crosses a door, in the order first walked
    (the command's entry not counted)."""
    layer = _layers()._layer
    return [(layer(s.caller), layer(s.callee)) for s in route
            if s.caller is not None and layer(s.caller) != layer(s.callee)]


def upward(route: list[Step]) -> list[str]:
    """The calls into a room above the caller's (an arrow up): ``caller.function -> callee.function``."""
    layers = _layers()
    return [f"{s.caller}.{s.caller_function} -> {s.callee}.{s.callee_function}" for s in route
            if s.caller is not None and layers._rank(s.callee) > layers._rank(s.caller)]


def trace_route(argv: list[str]) -> list[Step]:
    """Each pair of functions, one ``crossner_hf`` module's calling another's, in the order first called while the
    ``train`` command runs ``crossner-hf ARGV`` in this process (a pair called again is not listed again).

    The route starts where the issue's reading starts, at the command (``commands/train.py:main``) with its parsed
    arguments: the flags are parsed first, by the command's own parser, outside the trace."""
    import logging

    from crossner_hf.commands.train import main as train_main
    from crossner_hf.commands.train import make_parser

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if argv[0] != "train":
        raise SystemExit(f"this script traces the train command, not {argv[0]!r}")
    parsed = make_parser().parse_args_and_config(argv[1:])  # (TrainArguments, FinetuneConfig)
    route: list[Step] = []
    seen: set[Step] = set()

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
        if caller != callee:
            step = Step(caller, callee, frame.f_back.f_code.co_qualname, frame.f_code.co_qualname)
            if step not in seen:
                seen.add(step)
                route.append(step)

    sys.setprofile(hook)
    try:
        code = train_main(*parsed)
    finally:
        sys.setprofile(None)
    if code:
        raise SystemExit(f"crossner-hf {' '.join(argv)} exited with {code}")
    return route


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max_crossings", type=int, default=None,
                        help="Exit 1 when more calls cross from one room into another (any arrow up always does).")
    parser.add_argument("--calls", action="store_true", help="Also print each call as caller.function -> "
                        "callee.function, with its rooms.")
    args = parser.parse_args()
    from crossner_hf.testing import make_tiny_bert

    with tempfile.TemporaryDirectory() as tmp:
        model = make_tiny_bert(str(Path(tmp) / "tiny"))
        # the same route on every machine: the CrossNER files parsed into a cache of this run's own before the
        # trace (a second run's route; a first run also enters the CoNLL reader and the columns' rules to parse)
        os.environ["CROSSNER_HF_CACHE"] = str(Path(tmp) / "cache")
        from crossner_hf.data.target import load_target

        load_target("politics")
        route = trace_route(["train", "--domain", "politics", "--model_name_or_path", str(model), "--max_steps", "2",
                             "--per_device_train_batch_size", "4", "--few_shot", "8", "--use_cpu", "true",
                             "--disable_tqdm", "true", "--output_dir", str(Path(tmp) / "run")])
    doors, up = crossings(route), upward(route)
    if args.calls:
        print("calls:")
        for n, s in enumerate(route, 1):
            rooms = f"{room_of(s.caller) if s.caller else '-'} -> {room_of(s.callee)}"
            print(f"  {n:3d}  {rooms:<26} {str(s.caller).removeprefix('crossner_hf.')}.{s.caller_function} -> "
                  f"{s.callee.removeprefix('crossner_hf.')}.{s.callee_function}")
    walk = [room_of(route[0].callee)] + [callee for _, callee in doors]
    print("rooms entered, in order (the politics files already parsed):", " -> ".join(walk))
    print("\nentries per room:")
    for room, n in Counter(callee for _, callee in doors).most_common():
        print(f"  {n:3d}  {room}")
    print("\ndoors crossed (caller room -> callee room):")
    for (src, dst), n in Counter(doors).most_common():
        print(f"  {n:3d}  {src} -> {dst}")
    modules = {s.callee for s in route}
    print(f"\n{len(doors)} crossings between {len(set(walk))} rooms, {len(up)} up "
          f"({len(modules)} modules, {len(route)} pairs of functions between modules: not the measure)")
    for call in up:
        print(f"  up: {call}")
    over = bool(up) or (args.max_crossings is not None and len(doors) > args.max_crossings)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
