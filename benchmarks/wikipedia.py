"""Benchmark: Wikipedia dump processing against WikiExtractor 3.1, side by side in one run.

Run: NLTK_DATA=../shared/data/nltk_data python benchmarks/wikipedia.py [--repeat 4] [--runs 3]
     (pip install wikiextractor==3.1.0, or `pip install -e .[benchmark]`)

The input is the shared sample dump (206 pages, 6.1 MB of XML) with its pages repeated
``--repeat`` times, bz2-compressed as real dumps are. Throughput is MB of dump XML
(uncompressed) per second of wall time, per core; every method runs in its own process,
round-robin over ``--runs`` runs, and the median is reported:

- (a) WikiExtractor 3.1 text extraction with links (``python -m wikiextractor.WikiExtractor
  DUMP -o OUT --links --processes 1``): the speed peer named by the issue;
- (b) our reader (``iter_pages``) + ``wikitext_to_text`` alone (text and anchors);
- (c) the whole NER-BERT builder (``dataset_scripts/nerbert_wikipedia.py``: extract with
  sentences, words and anchors, redirects, typing, filtering, balancing, the dataset folder
  and card), one worker, DBpedia lookup prebuilt;
- (d) the whole CrossNER domain-corpora builder from the dump (``dataset_scripts/crossner_corpora.py
  --domain politics --wikipedia_dump``: the page index, the category walk, every sentence of the chosen
  pages extracted and typed, the four levels and their dataset folder; it builds its own DBpedia
  lookup), on the multistream form, 1 worker;
- all cores: (a) with ``--processes 2``, (c) and (d) on the multistream form of the same dump
  with ``--workers 2``.

With ``--dump_dir`` (a dump from ``benchmarks/wikipedia_scale.py dump``): WikiExtractor and the two
builders (``--builders``) at 1 and all cores, with each builder's scaling, a check that every build's
dataset equals the 1-worker one, and each builder's wall seconds per step (its timings file).

Peak memory (max RSS of the builder's processes) at 1x and 4x input, and the DBpedia
lookup built from ``--entities`` synthetic entities (``benchmarks/dbpedia_types.py``).
"""

from __future__ import annotations

import argparse
import bz2
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def repeated_dump(source: Path, repeat: int, out: Path) -> int:
    """The sample's pages ``repeat`` times (ids offset so every page stays unique); returns XML bytes."""
    text = bz2.open(source).read().decode("utf-8")
    first, end = text.index("  <page>"), text.rindex("</mediawiki>")
    pages = text[first:end]
    parts = [text[:first]]
    for copy in range(repeat):
        parts.append(re.sub(r"(<page>\s*<title>[^<]*</title>\s*<ns>\d+</ns>\s*<id>)(\d+)(</id>)",
                            lambda m: f"{m.group(1)}{int(m.group(2)) + copy * 10_000_000}{m.group(3)}", pages))
    parts.append(text[end:])
    data = "".join(parts).encode("utf-8")
    out.write_bytes(bz2.compress(data))
    return len(data)


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB, the largest process) of a command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode:
        raise RuntimeError(f"{' '.join(command[:4])} ... failed:\n{result.stderr[-2000:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return elapsed, max(peak, before) / 1024


READER = """
import sys, time
from crossner_hf.wikipedia import iter_pages, wikitext_to_text
for page in iter_pages(sys.argv[1], namespaces=[0]):
    if page.redirect is None:
        wikitext_to_text(page.wikitext)
"""


def builder(dump: Path, out: Path, types_db: Path, workers: int, index: Path | None = None) -> list[str]:
    command = [sys.executable, str(ROOT / "dataset_scripts" / "nerbert_wikipedia.py"), "--dump", str(dump),
               "--ontology", str(SHARED / "dbpedia" / "dbpedia_2016-10.owl"),
               "--instance_types", str(SHARED / "dbpedia" / "instance_types_en_wiki_subset.nt"),
               "--output_dir", str(out), "--types_db", str(types_db), "--workers", str(workers),
               "--nltk_data", str(SHARED / "nltk_data")]
    if index is not None:
        command += ["--index", str(index), "--unit_mb", "1"]
    return command


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=4, help="copies of the sample's pages in the input")
    parser.add_argument("--runs", type=int, default=3, help="runs per method (median reported)")
    parser.add_argument("--entities", type=int, default=5_000_000, help="synthetic entities for the DBpedia build "
                        "(0 skips it)")
    parser.add_argument("--skip_memory", action="store_true", help="skip the 1x/4x peak-memory runs")
    parser.add_argument("--dump_dir", help="instead of the repeated sample: a dump made by `python "
                        "benchmarks/wikipedia_scale.py dump` (multistream dump, index, instance types); WikiExtractor "
                        "and the builder with 1 and all workers, --runs times each, with each run's peak RSS")
    parser.add_argument("--builders", nargs="+", choices=list(BUILDERS), default=list(BUILDERS),
                        help="with --dump_dir: the builders measured beside WikiExtractor")
    args = parser.parse_args(argv)
    if args.dump_dir:
        at_scale(Path(args.dump_dir), args.runs, args.builders)
        return

    from crossner_hf.testing import make_multistream_dump
    from crossner_hf.wikipedia.dbpedia import build_types_db, load_ontology

    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    work = Path(tempfile.mkdtemp(prefix="bench-wikipedia-"))
    dump = work / "dump.xml.bz2"
    xml_mb = repeated_dump(SHARED / "wikipedia" / "enwiki-sample-pages-articles.xml.bz2", args.repeat, dump) / 1e6
    multistream, index = work / "ms.xml.bz2", work / "ms-index.txt"
    make_multistream_dump(dump, multistream, index, pages_per_stream=100)
    instance_types = SHARED / "dbpedia" / "instance_types_en_wiki_subset.nt"
    types_db = build_types_db([instance_types],
                              load_ontology(SHARED / "dbpedia" / "dbpedia_2016-10.owl"), work / "types.sqlite")
    reader = work / "reader.py"
    reader.write_text(READER)
    cores = os.cpu_count() or 1

    def out_dir(name: str, run: int) -> Path:
        return work / f"{name}-{run}"

    methods = {
        "(a) WikiExtractor 3.1 --links, 1 process": (1, lambda r: [
            sys.executable, "-m", "wikiextractor.WikiExtractor", str(dump), "-o", str(out_dir("wx", r)),
            "--links", "--processes", "1", "-q"]),
        "(b) our reader + wikitext_to_text, 1 process": (1, lambda r: [sys.executable, str(reader), str(dump)]),
        "(c) whole NER-BERT builder, 1 worker": (1, lambda r: builder(dump, out_dir("c1", r), types_db, 1)),
        "(d) whole domain-corpora builder (politics), 1 worker": (1, lambda r: domain_builder(
            multistream, index, instance_types, out_dir("d1", r), 1)),
        f"(a) WikiExtractor 3.1 --links, {cores} processes": (cores, lambda r: [
            sys.executable, "-m", "wikiextractor.WikiExtractor", str(dump), "-o", str(out_dir("wxn", r)),
            "--links", "--processes", str(cores), "-q"]),
        f"(c) whole NER-BERT builder, multistream, {cores} workers": (cores, lambda r: builder(
            multistream, out_dir("cn", r), types_db, cores, index)),
        f"(d) whole domain-corpora builder, multistream, {cores} workers": (cores, lambda r: domain_builder(
            multistream, index, instance_types, out_dir("dn", r), cores)),
    }
    seconds: dict[str, list[float]] = {name: [] for name in methods}
    for run in range(args.runs):
        for name, (_, command) in methods.items():
            elapsed, _ = timed(command(run), env)
            seconds[name].append(elapsed)
            print(f"run {run + 1}: {name}: {elapsed:.2f} s", file=sys.stderr)

    peer = statistics.median(seconds["(a) WikiExtractor 3.1 --links, 1 process"])
    print(f"\nInput: sample dump x{args.repeat}, {xml_mb:.1f} MB of XML (bz2), {cores} cores; medians of {args.runs} "
          "runs, wall time including interpreter start.\n")
    print("| method | cores | median s | MB/s | MB/s per core | x (a) per core |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (n, _) in methods.items():
        median = statistics.median(seconds[name])
        print(f"| {name} | {n} | {median:.2f} | {xml_mb / median:.2f} | {xml_mb / median / n:.2f} | "
              f"{(peer / median) / n:.2f} |")

    if not args.skip_memory:
        print("\n| builder input (1 worker) | XML MB | peak RSS MB |")
        print("|---|---:|---:|")
        for repeat in (1, 4):
            path = work / f"mem-{repeat}.xml.bz2"
            size = repeated_dump(SHARED / "wikipedia" / "enwiki-sample-pages-articles.xml.bz2", repeat, path) / 1e6
            command = builder(path, work / f"mem-out-{repeat}", types_db, 1)
            _, peak = _peak_of(command, env)
            print(f"| sample x{repeat} | {size:.1f} | {peak:.0f} |")

    if args.entities:
        sys.path.insert(0, str(Path(__file__).parent))
        from dbpedia_types import run as dbpedia_run

        result = dbpedia_run(args.entities, work / "dbpedia")
        print("\n| DBpedia lookup build | value |\n|---|---:|")
        for key, value in result.items():
            print(f"| {key} | {value} |")


DOMAIN_SEEDS = ["19th-century American politicians", "Theoretical physicists"]
"""Seed categories of the domain-corpora runs: the README's example; the sample's copies keep their categories."""


def domain_builder(dump: Path, index: Path, instance_types: Path, out: Path, workers: int) -> list[str]:
    """The CrossNER domain-corpora builder from a dump (extract every sentence, type, category walk, levels)."""
    return [sys.executable, str(ROOT / "dataset_scripts" / "crossner_corpora.py"), "--domain", "politics",
            "--wikipedia_dump", str(dump), "--wikipedia_index", str(index),
            "--ontology", str(SHARED / "dbpedia" / "dbpedia_2016-10.owl"), "--instance_types", str(instance_types),
            "--seed_categories", *DOMAIN_SEEDS, "--nltk_data", str(SHARED / "nltk_data"),
            "--output_dir", str(out), "--workers", str(workers)]


BUILDERS = {"nerbert": ("whole NER-BERT builder", "c"), "domain": ("whole domain-corpora builder (politics)", "d")}
"""The builders ``--builders`` picks: table name and output-folder prefix."""


def at_scale(folder: Path, runs: int, builders: list[str]) -> None:
    """WikiExtractor and the whole builders on a generated multistream dump, 1 and all cores, one table."""
    import json

    from crossner_hf.wikipedia.dbpedia import build_types_db, load_ontology

    made = json.loads((folder / "scale.json").read_text(encoding="utf-8"))
    dump, index, xml_mb = folder / "dump.xml.bz2", folder / "index.txt.bz2", made["xml_mb"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TOKENIZERS_PARALLELISM": "false"}
    work = Path(tempfile.mkdtemp(prefix="bench-wikipedia-scale-", dir=folder))
    types_db = work / "types.sqlite"
    if "nerbert" in builders:
        start = time.perf_counter()
        build_types_db([folder / "instance_types.nt"], load_ontology(SHARED / "dbpedia" / "dbpedia_2016-10.owl"),
                       types_db)
        print(f"DBpedia lookup of {made['type_lines']:,} type lines: {time.perf_counter() - start:.1f} s "
              "(prebuilt for the NER-BERT builder, outside its timings; the domain-corpora builder builds its own)",
              file=sys.stderr)
    cores = os.cpu_count() or 1

    def run_builder(kind: str, workers: int, run: int) -> list[str]:
        out = work / f"{BUILDERS[kind][1]}{workers}-{run}"
        if kind == "domain":
            return domain_builder(dump, index, folder / "instance_types.nt", out, workers)
        command = builder(dump, out, types_db, workers, index)
        return command[:command.index("--unit_mb")]  # the builder's default task size at this scale

    def worker_name(n: int) -> str:
        return "1 worker" if n == 1 else f"{n} workers"

    methods: dict[str, tuple[int, object]] = {}
    for n in (1, cores):
        methods[f"WikiExtractor 3.1 --links, {n} process{'es' if n > 1 else ''}"] = (n, lambda r, n=n: [
            sys.executable, "-m", "wikiextractor.WikiExtractor", str(dump), "-o", str(work / f"wx{n}-{r}"),
            "--links", "--processes", str(n), "-q"])
        for kind in builders:
            methods[f"{BUILDERS[kind][0]}, {worker_name(n)}"] = (n, lambda r, n=n, kind=kind: run_builder(kind, n, r))
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in methods}
    for run in range(runs):
        for name, (_, command) in methods.items():
            results[name].append(_peak_of(command(run), env))
            print(f"run {run + 1}: {name}: {results[name][-1][0]:.1f} s, peak RSS {results[name][-1][1]:.0f} MB",
                  file=sys.stderr)
    peer = statistics.median(s for s, _ in results["WikiExtractor 3.1 --links, 1 process"])
    print(f"\nInput: {folder.name}, {made['pages']:,} pages ({made['copies']} renamed copies of the sample), "
          f"{xml_mb:,.0f} MB of XML, {made['bz2_mb']:,.0f} MB bz2 multistream; {cores} cores; medians of {runs} "
          f"run(s), wall time including interpreter start; peak RSS is the largest single process.\n")
    print("| method | cores | median s | MB/s | MB/s per core | x WikiExtractor per core | peak RSS MB |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (n, _) in methods.items():
        median = statistics.median(s for s, _ in results[name])
        peak = max(p for _, p in results[name])
        print(f"| {name} | {n} | {median:.1f} | {xml_mb / median:.2f} | {xml_mb / median / n:.2f} | "
              f"{(peer / median) / n:.2f} | {peak:.0f} |")
    for kind in builders:
        label, prefix = BUILDERS[kind]
        one = statistics.median(s for s, _ in results[f"{label}, 1 worker"])
        all_ = statistics.median(s for s, _ in results[f"{label}, {worker_name(cores)}"])
        print(f"\n{label}: scaling, {cores} workers vs 1: {one / all_:.2f}x; {_folder_summary(work / f'{prefix}1-0')}")
        builds = sorted(p for p in work.iterdir() if p.is_dir() and p.name.startswith(prefix) and not p.suffix)
        reference = _tables(work / f"{prefix}1-0")
        same = [b.name for b in builds if _tables(b) == reference]
        print(f"Datasets identical to {prefix}1-0 (whatever the task count): {len(same)} of {len(builds)} builds")
        if kind == "domain":
            print(_chosen_pages(work / f"{prefix}1-0.work"))
        _print_timings(work, prefix, "politics" if kind == "domain" else None, runs, cores)


def _folder_summary(folder: Path) -> str:
    import pyarrow.parquet as pq

    size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    shards = sorted(folder.rglob("*.parquet"))
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in shards)
    return (f"the 1-worker dataset folder: {size / 1e6:,.0f} MB, {len(shards)} Parquet shards, {rows:,} rows over "
            "all configs and splits")


def _chosen_pages(work: Path) -> str:
    """How much of the dump the domain build parsed: the pages its category walk chose, of the articles."""
    import numpy as np
    import pyarrow.parquet as pq

    articles = sum(pq.ParquetFile(f).metadata.num_rows for f in (work / "index" / "page").glob("*.parquet"))
    chosen = sum(len(np.load(f)) for f in (work / "domain").glob("*/members.npy"))
    sentences = sum(pq.ParquetFile(f).metadata.num_rows for f in (work / "domain").glob("*/typed/*.parquet"))
    return (f"Pages the category walk chose (the only ones parsed): {chosen:,} of {articles:,} articles "
            f"({100 * chosen / max(articles, 1):.1f}%), {sentences:,} sentences extracted")


def _tables(folder: Path) -> dict[str, object]:
    import pyarrow.parquet as pq

    return {str(f.relative_to(folder)): pq.read_table(f) for f in sorted(folder.rglob("*.parquet"))}


def _print_timings(work: Path, prefix: str, domain: str | None, runs: int, cores: int) -> None:
    """Median wall seconds of each builder step (the builder's timings file), 1 worker beside all."""
    import json

    from crossner_hf.wikipedia.build import timings_file

    def steps(workers: int) -> dict[str, float]:
        found = [json.loads(timings_file(work / f"{prefix}{workers}-{r}.work", domain).read_text())
                 for r in range(runs)]
        return {k: statistics.median(t[k] for t in found) for k in found[0]}

    one, many = steps(1), steps(cores)
    tasks = [len(json.loads((work / f"{prefix}{w}-0.work" / "manifest.json").read_text())["tasks"]) for w in (1, cores)]
    print(f"\nBuilder steps, median wall s ({tasks[0]} dump tasks with 1 worker, {tasks[1]} with {cores}):\n")
    print(f"| step | 1 worker | {cores} workers | scaling |")
    print("|---|---:|---:|---:|")
    for step in one:
        ratio = f"{one[step] / many[step]:.2f}x" if many[step] >= 0.5 else "-"
        print(f"| {step} | {one[step]:.1f} | {many[step]:.1f} | {ratio} |")
    print(f"| sum | {sum(one.values()):.1f} | {sum(many.values()):.1f} | "
          f"{sum(one.values()) / sum(many.values()):.2f}x |")


def _peak_of(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run in a fresh Python so RUSAGE_CHILDREN sees only this command's processes."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter(); subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, "
        "stderr=subprocess.DEVNULL)\n"
        "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe, *command], env=env, capture_output=True, text=True, check=True)
    seconds, peak = out.stdout.split()
    return float(seconds), float(peak)


if __name__ == "__main__":
    main()
