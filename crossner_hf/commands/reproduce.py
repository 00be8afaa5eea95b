"""Reproduce an experiment of the papers as a resumable grid of ``crossner-hf`` runs.

Usage:
    crossner-hf reproduce crossner-table2 --scale cpu --domains politics --output_dir repro/table2 --dry_run
    crossner-hf reproduce crossner-table2 --scale cpu --domains politics --corpora politics-wiki-corpora \\
        --output_dir repro/table2
    crossner-hf reproduce crossner-table2 --scale paper --executor slurm --slurm_partition gpu --output_dir t2 \\
        --corpora corpora --word_vectors glove.6B.100d.txt --word_vectors_300d glove.6B.300d.txt \\
        --char_ngram_vectors charNgram.txt

Every cell is one run of an existing command (``train``, ``dapt``, ``nerbert``, ``bilstm-crf``, ``cdlm``,
``multicell``, ``plot-entities``) in
``OUT/cells/<name>``, skipped when its results are complete; DAPT cells run before the
fine-tuning that reads them. A failed cell is reported and the others go on; rerunning the same
command resumes. At the end ``OUT/table.md`` and ``OUT/table.csv`` hold our numbers beside the
paper's (the figures also ``OUT/figure.png``), and the status table is printed. ``--status``
prints the table and status only. The RNN rows read the papers' pre-trained vectors from ``--word_vectors``,
``--word_vectors_300d`` and ``--char_ngram_vectors``: at ``--scale paper`` a cell without its file is 'missing
input' (``--random_vectors`` runs it on random vectors, and the table says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from crossner_hf.reproduce.experiments import EXPERIMENTS
from crossner_hf.arguments import make_command_parser
from crossner_hf.commands.executor_args import ExecutorArguments


@dataclass
class ReproduceArguments(ExecutorArguments):
    experiment: str = field(metadata={"positional": True, "help": "The experiment: a table or figure of the papers.",
                                      "choices": list(EXPERIMENTS)})
    output_dir: str = field(metadata={"help": "Folder of the grid: cells/, table.md, table.csv, plan.json."})
    scale: str = field(default="cpu", metadata={
        "help": "smoke: tiny random model, a few steps (tests); cpu: the packaged MiniLM, budgets for a 2-core "
                "machine (what it cuts is listed); paper: the paper presets and bert-base-cased.",
        "choices": ["smoke", "cpu", "paper"]})
    domains: list[str] | None = field(default=None, metadata={
        "help": "Domains (columns) to run (default: the paper's: all five for crossner-table2, music for "
                "crossner-fig2/fig3/table4, politics for nerbert-fig3, the eleven columns of nerbert-table2 at --scale "
                "paper (the five CrossNER ones otherwise), the six non-CrossNER ones for nerbert-fig2; the CDLM "
                "experiments: the paper's datasets alone at --scale paper (table3: bionlp13pc, bionlp13cg; table4/5 "
                "and fig8: cbs_news; fig6: bionlp13cg), politics otherwise; a CrossNER domain named here is an "
                "extension column)."})
    seeds: list[int] | None = field(default=None, metadata={
        "help": "Seeds (default: smoke 1; cpu 555; paper: 555 666 777 for CrossNER (the paper's three runs, "
                "002:512) and CDLM (which states no run count), 555 666 777 888 999 for NER-BERT (five, 003:138))."})
    rows: list[str] | None = field(default=None, metadata={
        "help": "Only these rows (the paper's labels, e.g. 'direct / w/o DAPT' 'pretrain-finetune / DAPT span / integrated'), with the cells they "
                "depend on (default: every row)."})
    model: str | None = field(default=None, metadata={
        "help": "Encoder for the BERT rows (default: per scale; smoke makes a tiny random BERT in OUT/tiny-bert)."})
    corpora: str | None = field(default=None, metadata={
        "help": "Folder built by `crossner-hf build-corpora` (configs <domain>-<level>) for the DAPT rows; "
                "without it those rows show 'missing input'."})
    nerbert_corpus: str | None = field(default=None, metadata={
        "help": "Folder built by `crossner-hf build-nerbert-corpus` (configs all, 4types, 212types) for the "
                "NER-BERT rows; without it those rows show 'missing input'."})
    data_dir: str | None = field(default=None, metadata={
        "help": "CrossNER data folder (default: $CROSSNER_DATA_DIR)."})
    raw_text: list[str] | None = field(default=None, metadata={
        "help": "cdlm-table4/-table5/-fig8's raw corpora, NAME=FILE (one sentence a line): source=Reuters news "
                "(377,592 sentences, "
                "004:737-739) and cbs_news=CBS SciTech News (398,990, 004:772-774); the zero-shot CBS cells need "
                "them and show 'missing input' without them."})
    word_vectors: str | None = field(default=None, metadata={
        "help": "GloVe 6B 100d (glove.6B.100d.txt), for every RNN cell that reads it: CDLM's models and STM "
                "baselines (004:835-837; cdlm-table3/4/5, cdlm-fig6/8, crossner-table2's CDLM row) and the "
                "multi-cell LSTM rows. At --scale paper those cells show 'missing input' without it."})
    word_vectors_300d: str | None = field(default=None, metadata={
        "help": "GloVe 6B 300d (glove.6B.300d.txt), for crossner-table2's BiLSTM-CRF and Coach rows (002:429-431; "
                "the CrossNER release's README.md:91). At --scale paper they show 'missing input' without it."})
    char_ngram_vectors: str | None = field(default=None, metadata={
        "help": "Character n-gram vectors of Hashimoto et al. (torchtext's CharNGram, 100d, '2gram-#BEGIN#a v1 ... "
                "v100' lines), for crossner-table2's BiLSTM-CRF and Coach (word + char) rows (002:429-431). At "
                "--scale paper they show 'missing input' without it."})
    random_vectors: bool = field(default=False, metadata={
        "help": "At --scale paper, run the RNN rows on random vectors instead of the files above (a cut: the "
                "table's notes say so). At smoke and cpu random vectors are the default, listed among the cuts."})
    datasets: list[str] | None = field(default=None, metadata={
        "help": "nerbert-table2, nerbert-fig2 and the CDLM tables and figures: the paper's non-CrossNER columns as "
                "NAME=SOURCE (NER-BERT: twitter, broad_twitter, bionlp13cg, bionlp13pc, finance, defence; CDLM: "
                "bionlp13pc, bionlp13cg, cbs_news; SOURCE: a Hub id or a folder load_dataset "
                "opens, or a CoNLL folder; see `train --dataset_dir`), or further datasets as NAME=SOURCE or a bare "
                "folder (named after it). At --scale paper a paper column without a source shows 'missing input'."})
    dry_run: bool = field(default=False, metadata={
        "help": "Print the cells, their dependencies, inputs and estimated cost; run nothing."})
    status: bool = field(default=False, metadata={
        "help": "Print the status table and write table.md/table.csv from what is done; run nothing."})
    prune: str = field(default="off", metadata={
        "help": "on: race the method rows within each column (one seed of every row first, more seeds only to rows "
                "that can still win on dev, a training clearly behind the column's leader at the same share of its "
                "budget stopped, resumable); off (default): every cell in full, as a paper's table needs. "
                "--executor local only.", "choices": ["on", "off"]})
    time_budget: float | None = field(default=None, metadata={
        "help": "Minutes the run may take: a cell starts only while its estimate fits, the running ones are stopped "
                "(resumable) when the time is up, and the table says what was cut. --executor local only."})


def make_parser(subparsers: Any | None = None):
    return make_command_parser(
        subparsers, "reproduce", (ReproduceArguments,), prog="crossner-hf reproduce",
        help="run a paper's experiment as a resumable grid, our numbers beside the paper's", description=__doc__,
    )


def check_plan(cells: Any) -> None:
    """Each cell's settings checked by its own command's parser (:func:`crossner_hf.grid.study.check_settings`),
    before anything runs: ``reproduce`` and ``adapt`` plan their cells through it."""
    import importlib

    from crossner_hf.grid.cells import COMMAND_TABLE
    from crossner_hf.grid.study import check_settings

    def parser_of(command: str) -> Any:  # the command's own module (the one table names it), its parser
        if command not in COMMAND_TABLE:
            raise ValueError(f"a cell runs crossner-hf {command}, which is no command: choose one of "
                             f"{', '.join(COMMAND_TABLE)}; fix the plan (no cell has run).")
        return importlib.import_module(f"crossner_hf.commands.{COMMAND_TABLE[command][0]}").make_parser()

    check_settings(cells, parser_of)


def main(args: ReproduceArguments) -> int:
    """Plan the experiment, then print it (``--dry_run``), or run it (``--status``: only read what is done) and print
    the status table and our table beside the paper's; 1 when a cell failed."""
    import sys

    from crossner_hf.reproduce.experiments import plan
    from crossner_hf.grid import status_table
    from crossner_hf.reproduce.run import dry_run_text, run_experiment
    from crossner_hf.reproduce.vectors import RNNVectors

    vectors = RNNVectors.from_flags(args.scale, word_vectors=args.word_vectors,
                                    word_vectors_300d=args.word_vectors_300d,
                                    char_ngram_vectors=args.char_ngram_vectors, random_vectors=args.random_vectors)
    grid = plan(args.experiment, args.scale, args.output_dir, domains=args.domains, seeds=args.seeds, model=args.model,
                corpora=args.corpora, data_dir=args.data_dir, rows=args.rows, nerbert_corpus=args.nerbert_corpus,
                datasets=args.datasets, raw_text=args.raw_text, vectors=vectors)
    check_plan(grid.cells)  # a misspelt setting is one line now, not a failure in every cell that has it
    if args.dry_run:
        print(dry_run_text(grid.cells, args.output_dir))
        for row, reason in grid.unplanned:
            print(f"paper row not planned: {row}: {reason}")
        if grid.notes:
            print(f"What this plan (--scale {args.scale}) cuts against the paper:\n"
                  + "\n".join(f"- {n}" for n in grid.notes))
        return 0
    options = args.executor_options()
    if args.time_budget is not None and args.time_budget <= 0:
        raise ValueError(f"--time_budget {args.time_budget:g}: give the minutes the run may take (more than 0).")
    result = run_experiment(grid, args.output_dir, options, run=not args.status, prune=args.prune == "on",
                            time_budget=args.time_budget)
    print(status_table(grid.cells, args.output_dir), file=sys.stderr)
    if args.status:  # how much is left, the started cells' saved steps counted
        from crossner_hf.grid.study import counts_line, price

        print(counts_line(result.status, price(grid.cells, args.output_dir)), file=sys.stderr)
    print(result.table.read_text())
    return 1 if result.failed else 0
