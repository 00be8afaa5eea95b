"""Tag text with a trained model, decoded the way its reported F1 was (its provenance record).

Usage:
    crossner-hf predict --model OUT "Obama visited Berlin, Germany."        # raw text, JSON lines
    crossner-hf predict --model OUT --input_file news.txt --output tags.jsonl
    cat sentences.txt | crossner-hf predict --model OUT --pretokenized      # words split by spaces
    crossner-hf predict --model OUT --conll test.txt --output pred.conll    # gold + predicted columns, scores
    crossner-hf predict --model OUT --dataset_dir mydata --split test       # any labeled source: the scores

Inputs come from the arguments, ``--input_file`` or standard input, one text a line. Raw
text is split into sentences (NLTK punkt) and words the way the CrossNER files are
(``Berlin , Germany .``); ``--pretokenized`` takes space-separated words as they are.
Output is one JSON record per input line, empty lines included (``{"text", "entities":
[{"entity_group", "score", "word", "start", "end"}]}``: the entities exactly as
``CrossNERTokenClassificationPipeline`` returns them, offsets into the line), or CoNLL
(``--format conll``: ``word<TAB>tag``, a blank line after each input line). With
``--conll FILE`` (``word<TAB>gold`` lines), or ``--dataset_dir SOURCE --split NAME`` / ``--domain NAME`` (any
labeled source ``report`` and ``train`` read, with the same column and ``--strict`` flags), ``--output FILE`` gets
``word<TAB>gold<TAB>predicted`` columns (nothing is tagged to the screen), and the scores go to standard error: the
lines ``report`` prints
(:meth:`crossner_hf.evaluation.scoring.Evaluation.summary`, computed by ``evaluate_tagger``), so the three agree.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Iterator
from typing import Any, TextIO

from crossner_hf.modeling.heads import DECODINGS
from crossner_hf.arguments import make_command_parser, set_torch_threads
from crossner_hf.data.target import SplitDataArguments

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "conll")


@dataclass
class PredictArguments(SplitDataArguments):
    inputs: list[str] = field(
        default_factory=list,
        metadata={"positional": True, "nargs": "*", "metavar": "TEXT",
                  "help": "Texts to tag, one per argument (default: --input_file or standard input)."},
    )
    model: str = field(
        default=None,
        metadata={"help": "A trained token-classification model: the output_dir of `crossner-hf train` or a "
                  "Hub id."},
    )
    input_file: str | None = field(default=None, metadata={"help": "Read texts from this file, one a line."})
    pretokenized: bool = field(
        default=False, metadata={"help": "Inputs are words separated by single spaces; no splitting."}
    )
    conll: str | None = field(
        default=None,
        metadata={"help": "A CoNLL file (word<TAB>gold tag, blank line between sentences): predict, write "
                  "gold and predicted columns and print the scores."},
    )
    output: str | None = field(default=None, metadata={
        "help": "Write here instead of standard output (with --conll / --dataset_dir / --domain: the tags, "
                "which are not printed otherwise; the scores always go to standard error)."})
    format: str | None = field(
        default=None,
        metadata={"help": "Output format (default: jsonl, or conll with --conll / --dataset_dir / --domain).",
                  "choices": list(FORMATS)},
    )
    decoding: str | None = field(
        default=None,
        metadata={"help": "Override the decoding the model records (its config's crossner_provenance).",
                  "choices": list(DECODINGS)},
    )
    batch_size: int = field(default=32, metadata={"help": "Windows per forward pass."})
    device: str | None = field(default=None, metadata={"help": "torch device, e.g. cpu or cuda:0."})
    threads: int | None = field(
        default=None, metadata={"help": "CPU threads: ONNX Runtime's for an exported folder, torch's otherwise "
                                        "(default: the runtime's own choice)."})
    nltk_data: str | None = field(
        default=None, metadata={"help": "Folder with NLTK's punkt_tab data (default: $NLTK_DATA)."}
    )

    def __post_init__(self):
        super().__post_init__()
        if not self.model:
            raise ValueError("predict needs --model: the output_dir of a `crossner-hf train` run or a Hub id.")
        given = [n for n, v in (("TEXT", self.inputs), ("--input_file", self.input_file), ("--conll", self.conll),
                                ("--dataset_dir" if self.dataset_dir else "--domain", self.dataset_dir or self.domain))
                 if v]
        if len(given) > 1:
            raise ValueError(f"predict: give texts in one way only (got {' and '.join(given)}).")
        if given and given[0] in ("--conll", "--dataset_dir", "--domain") and self.pretokenized:
            raise ValueError(f"predict: {given[0]} input is already word-split; drop --pretokenized.")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"--threads {self.threads}: give a positive number of CPU threads.")


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "predict", (PredictArguments,), prog="crossner-hf predict",
        help="tag raw text, pre-tokenised text or CoNLL files with a trained model", description=__doc__,
    )


CHUNK_LINES = 2000
"""Input lines read, tagged and written at a time: memory stays flat however long the input is."""


def main(args: PredictArguments) -> int:
    from crossner_hf.inference.tagger import Tagger
    from crossner_hf.outputs import atomic_output, check_writable

    if args.output:
        check_writable(args.output, "--output")
    if args.input_file and not Path(args.input_file).is_file():
        raise FileNotFoundError(f"--input_file {args.input_file}: no such file.")
    set_torch_threads(args.threads)
    # any trained folder: a transformers model, its ONNX export, or a BiLSTM-CRF / CDLM one
    tagger = Tagger.from_pretrained(args.model, device=args.device, decoding=args.decoding, threads=args.threads)
    if not args.output:
        _predict(args, tagger, sys.stdout)
        return 0
    # written beside and renamed when complete: the output is whole or absent, never a prefix
    with atomic_output(args.output) as tmp, open(tmp, "w", encoding="utf-8") as out:
        _predict(args, tagger, out)
    return 0


def _predict(args: PredictArguments, tagger: Any, out: TextIO) -> None:
    if args.conll or args.dataset_dir or args.domain:
        _predict_labeled(args, tagger, out)
        return
    from tqdm.auto import tqdm

    progress = None  # started after the first chunk: a bad input is one error line, no bar before it
    try:
        for chunk in _chunks(_iter_lines(args), CHUNK_LINES):
            _predict_lines(args, tagger, chunk, out)
            if progress is None:
                progress = tqdm(desc="Tagging", unit=" lines", disable=not args.input_file, leave=False)
            progress.update(len(chunk))
    finally:
        if progress is not None:
            progress.close()


def _chunks(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _iter_lines(args: PredictArguments) -> Iterator[str]:
    """The input's lines, one at a time (split on \\n only, a trailing \\r dropped: CRLF files read as LF)."""
    if args.inputs:
        yield from args.inputs
        return
    stream = open(args.input_file, "rb") if args.input_file else sys.stdin.buffer
    offset = 0
    try:
        for raw in stream:
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                where = f"--input_file {args.input_file}" if args.input_file else "standard input"
                raise ValueError(f"{where}: not UTF-8 text (byte {offset + err.start}: {err.reason}); pass "
                                 "UTF-8 text, one text a line.") from None
            offset += len(raw)
            yield line.removesuffix("\n").removesuffix("\r")
    finally:
        if args.input_file:
            stream.close()


def _predict_lines(args: PredictArguments, tagger: Any, lines: list[str], out: TextIO) -> None:
    # every sentence of the chunk's lines goes into one length-sorted batched run
    tagged = tagger.tag_texts(lines, pretokenized=args.pretokenized, nltk_data=args.nltk_data,
                              batch_size=args.batch_size)
    if (args.format or "jsonl") == "conll":
        from crossner_hf.data.conll import write_conll

        write_conll(out, [{"tokens": [w for w, _, _ in t["words"]], "ner_tags": t["tags"]} for t in tagged])
        return
    for t in tagged:
        entities = [{**e, "score": round(e["score"], 4)} for e in t["entities"]]
        out.write(json.dumps({"text": t["text"], "entities": entities}, ensure_ascii=False) + "\n")


def _conll_target(path: str, labels: list[str]) -> Any:
    """A one-split (``test``) :class:`~crossner_hf.data.target.TargetData` of a ``word<TAB>gold`` file."""
    from datasets import ClassLabel, Dataset, DatasetDict, Features, Sequence, Value

    from crossner_hf.data.conll import read_conll
    from crossner_hf.data.target import TargetData

    sentences = read_conll(path, labels, strict=False)
    index = {name: i for i, name in enumerate(labels)}
    features = Features({"tokens": Sequence(Value("string")), "ner_tags": Sequence(ClassLabel(names=labels))})
    rows = {"tokens": [s["tokens"] for s in sentences],
            "ner_tags": [[index[t] for t in s["ner_tags"]] for s in sentences]}
    return TargetData(Path(path).name, list(labels), DatasetDict({"test": Dataset.from_dict(rows, features=features)}))


def _predict_labeled(args: PredictArguments, tagger: Any, out: TextIO) -> None:
    """Tag and score ``--conll FILE``, or ``--split`` of ``--dataset_dir`` / ``--domain``, through
    ``evaluate_tagger``."""
    from crossner_hf.evaluation.scoring import evaluate_tagger

    if args.conll:
        target, split = _conll_target(args.conll, tagger.gold_labels), "test"
    else:
        target, split = args.load_target(), args.split
    evaluation = evaluate_tagger(tagger, target, split, batch_size=args.batch_size, model_name=Path(args.model).name)
    if not args.output:  # the scores are what a labeled run is for; the tags (a line a word) only when asked
        print(evaluation.summary(), file=sys.stderr)
        return
    if (args.format or "conll") == "conll":
        from crossner_hf.data.conll import write_conll

        write_conll(out, [{"tokens": w, "gold": g, "pred": p} for w, g, p in
                          zip(evaluation.tokens, evaluation.gold, evaluation.pred)], columns=("tokens", "gold", "pred"))
    else:
        for w, p in zip(evaluation.tokens, evaluation.pred):
            out.write(json.dumps({"tokens": w, "tags": p}, ensure_ascii=False) + "\n")
    print(evaluation.summary(), file=sys.stderr)
