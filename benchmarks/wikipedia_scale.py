"""Inputs at Wikipedia's scale for the builder benchmarks, generated from the shared sample.

Two generators and a command:

- :func:`make_scaled_dump`: a ``pages-articles-multistream`` dump of about ``--dump_mb`` MB of XML
  (bz2 streams of ``--pages_per_stream`` pages, the header and footer streams, and the
  ``offset:page_id:title`` index), made of copies of the sample's pages. Copy 0 is the sample
  itself; copy k > 0 renames every page ``"<title> v<k>"``, offsets its id by ``k x ID_STRIDE``
  and rewires every article link ``[[T|label]]`` (and ``#REDIRECT [[T]]``, ``<redirect title>``) to
  ``"T v<k>"`` with the surface text unchanged, so titles stay unique and each copy's links,
  redirects and typing resolve inside the copy exactly as the sample's do. The matching
  instance-types file repeats every ``<resource/R>`` line of the sample's as ``R_v<k>``.
  Links with a colon in the target (``File:``, ``Category:``, interwiki) are left as they are.
- :func:`make_typed_shards`: stage-2 typed-sentence shards (``stage2/typed/<rank>.parquet``, the
  builder's :data:`~crossner_hf.wikipedia.pipeline.TYPED_SCHEMA`) of ``--sentences`` sentences:
  Zipf-distributed words and categories (``--categories`` real DBpedia classes, so the merged
  config has parents to merge into), 29 words and 1-4 anchors a sentence on average (the paper's
  corpus: 475.6M tokens in 16.3M sentences), a share of untyped ``ENTITY`` anchors. The
  post-extraction steps (filters, balancing, split, dataset assembly) run on them as on a real
  work folder. Generated with numpy and pyarrow a shard at a time: memory stays flat.

Usage:
    python benchmarks/wikipedia_scale.py dump --dump_mb 2048 --output_dir /data/scale-2g
    python benchmarks/wikipedia_scale.py typed --sentences 16300000 --output_dir /data/typed-16m
    python benchmarks/wikipedia_scale.py post --work_dir /data/typed-16m     # the corpus steps, timed
    python benchmarks/wikipedia_scale.py peer --dump_dir /data/scale-50m --runs 5 --profile [--before_root DIR]

``peer``: WikiExtractor 3.1 (``--links --processes 1``) and the whole NER-BERT builder (one worker, its
DBpedia lookup prebuilt outside the timing, as ``benchmarks/wikipedia.py --dump_dir`` does) on the same
generated dump, interleaved run by run (the machine is shared: a burst of load hits both), each in a fresh
process; the medians, MB of XML a second and the ratio, the builder's wall seconds by step (its
``timings.json``), its start-up (CPU seconds before its first step: interpreter, imports, the flags; each
timed run records it through :data:`_STARTUP`), the load average around the runs, and with ``--profile`` one
more builder run under
cProfile cut into stages (reading, the redirect scan, wikitext to text, sentences and words, typing,
Parquet, the rest: start-up, imports, the corpus steps).
"""

from __future__ import annotations

import argparse
import bz2
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
SAMPLE_DUMP = SHARED / "wikipedia" / "enwiki-sample-pages-articles.xml.bz2"
SAMPLE_TYPES = SHARED / "dbpedia" / "instance_types_en_wiki_subset.nt"
ONTOLOGY = SHARED / "dbpedia" / "dbpedia_2016-10.owl"

ID_STRIDE = 100_000_000
SCALE_FILE = "scale.json"  # what make_scaled_dump made (sizes, paths), beside the dump
"""Copy k's page ids are the sample's plus k x ID_STRIDE (the sample's ids are far below it)."""

_PAGE = re.compile(r"  <page>.*?</page>\n", flags=re.DOTALL)
_TITLE = re.compile(r"<title>(.*?)</title>")
_ID = re.compile(r"(<ns>\d+</ns>\s*<id>)(\d+)(</id>)")
_REDIRECT = re.compile(r'<redirect title="([^"]*)" />')
_LINK = re.compile(r"\[\[([^\[\]|#:]+)(#[^\[\]|]*)?(\|[^\[\]]*)?\]\]")
_RESOURCE = re.compile(r"^<http://dbpedia\.org/resource/([^>]+)>")


def copy_title(title: str, copy: int) -> str:
    """The title of a page's ``copy``-th copy (copy 0: the title itself)."""
    return title if copy == 0 else f"{title} v{copy}"


def _rewire_link(match: re.Match, copy: int) -> str:
    target, section, label = match.group(1), match.group(2) or "", match.group(3)
    if not target.strip():
        return match.group(0)
    # the surface stays what the sample shows: [[T#s]] becomes [[T vk#s|T#s]] (MediaWiki shows the section)
    return f"[[{copy_title(target.strip(), copy)}{section}{label if label is not None else '|' + target + section}]]"


def copy_page(page: str, copy: int) -> str:
    """One ``<page>`` element of the sample as its ``copy``-th copy (see the module docstring)."""
    if copy == 0:
        return page
    page = _TITLE.sub(lambda m: f"<title>{copy_title(m.group(1), copy)}</title>", page, count=1)
    page = _ID.sub(lambda m: f"{m.group(1)}{int(m.group(2)) + copy * ID_STRIDE}{m.group(3)}", page, count=1)
    page = _REDIRECT.sub(lambda m: f'<redirect title="{copy_title(m.group(1), copy)}" />', page, count=1)
    return _LINK.sub(lambda m: _rewire_link(m, copy), page)


def sample_pages(source: str | Path = SAMPLE_DUMP) -> tuple[str, list[str], str]:
    """(header, article-namespace pages, footer) of a dump; other namespaces are left out (no copies of
    project pages, and category pages would repeat their titles)."""
    text = bz2.open(source).read().decode("utf-8")
    first, end = text.index("  <page>"), text.rindex("</mediawiki>")
    pages = [p for p in _PAGE.findall(text[first:end]) if "<ns>0</ns>" in p]
    return text[:first], pages, text[end:]


def make_scaled_dump(out_dir: str | Path, dump_mb: float, *, source: str | Path = SAMPLE_DUMP,
                     types: str | Path = SAMPLE_TYPES, pages_per_stream: int = 100) -> dict[str, object]:
    """Write ``dump.xml.bz2``, ``index.txt.bz2`` and ``instance_types.nt`` into ``out_dir``; returns sizes.

    Copies are added until the XML reaches ``dump_mb`` MB (whole copies: at least one).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header, pages, footer = sample_pages(source)
    per_copy = sum(len(p.encode("utf-8")) for p in pages)
    copies = max(1, round(dump_mb * 1e6 / per_copy))
    dump, index = out / "dump.xml.bz2", out / "index.txt.bz2"
    offset, xml_bytes, n_pages = 0, 0, 0
    with open(dump, "wb") as handle, bz2.open(index, "wt", encoding="utf-8") as lines:
        def stream(text: str) -> None:
            nonlocal offset, xml_bytes
            data = bz2.compress(text.encode("utf-8"))
            handle.write(data)
            offset += len(data)
            xml_bytes += len(text.encode("utf-8"))

        stream(header)
        batch: list[str] = []
        for copy in range(copies):
            for page in pages:
                batch.append(copy_page(page, copy))
                if len(batch) == pages_per_stream:
                    _index_lines(lines, offset, batch)
                    n_pages += len(batch)
                    stream("".join(batch))
                    batch = []
        if batch:
            _index_lines(lines, offset, batch)
            n_pages += len(batch)
            stream("".join(batch))
        stream(footer)
    type_lines = _copied_types(types, copies, out / "instance_types.nt")
    result = {"copies": copies, "pages": n_pages, "xml_mb": xml_bytes / 1e6, "bz2_mb": dump.stat().st_size / 1e6,
              "type_lines": type_lines, "dump": str(dump), "index": str(index),
              "instance_types": str(out / "instance_types.nt")}
    # benchmarks/wikipedia.py --dump_dir reads the XML size from here instead of decompressing gigabytes
    (out / SCALE_FILE).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return result


def _index_lines(lines, offset: int, batch: list[str]) -> None:
    for page in batch:
        title = _TITLE.search(page).group(1)
        page_id = _ID.search(page).group(2)
        lines.write(f"{offset}:{page_id}:{title}\n")


def _copied_types(types: str | Path, copies: int, out: Path) -> int:
    sample = [line for line in Path(types).read_text(encoding="utf-8").splitlines() if _RESOURCE.match(line)]
    written = 0
    with open(out, "w", encoding="utf-8") as handle:
        for copy in range(copies):
            for line in sample:
                if copy:
                    line = _RESOURCE.sub(lambda m: f"<http://dbpedia.org/resource/{m.group(1)}_v{copy}>", line)
                handle.write(line + "\n")
                written += 1
    return written


# --------------------------------------------------------------------------- typed shards

WORDS_PER_SENTENCE = 475.6e6 / 16.3e6
"""The paper's corpus: 475.6M tokens in 16.3M sentences (29.2 words a sentence)."""


def _categories(n: int, ontology: str | Path = ONTOLOGY) -> tuple[list[str], list[str]]:
    """``n`` DBpedia classes, deepest first (the merged config has parents to merge into): their
    lower-cased names (the ``all`` categories) and 4-type categories, as the typing stage writes them."""
    from crossner_hf.wikipedia.dbpedia import load_ontology

    classes = load_ontology(ontology)
    names = classes.by_specificity()
    if len(names) < n:
        raise ValueError(f"the ontology has {len(names)} classes; ask for at most that many --categories.")
    return [c.lower() for c in names[:n]], [classes.coarse(c) for c in names[:n]]


def make_typed_shards(out_dir: str | Path, sentences: int, *, categories: int = 315, shard_rows: int = 500_000,
                      entity_share: float = 0.3, seed: int = 0) -> dict[str, object]:
    """Write ``out_dir/stage2/typed/<rank>.parquet`` (see the module docstring); returns counts."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from crossner_hf.wikipedia.dbpedia import ENTITY
    from crossner_hf.wikipedia.pipeline import TYPED_SCHEMA

    rng = np.random.default_rng(seed)
    names, coarse = _categories(categories)
    vocabulary = pa.array([f"w{i}" for i in range(50_000)])
    folder = Path(out_dir) / "stage2" / "typed"
    folder.mkdir(parents=True, exist_ok=True)
    tokens_total = anchors_total = 0
    for rank, start in enumerate(range(0, sentences, shard_rows)):
        n = min(shard_rows, sentences - start)
        lengths = np.clip(rng.poisson(WORDS_PER_SENTENCE - 5, n) + 5, 5, 200)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        words = vocabulary.take(pa.array(np.minimum(rng.zipf(1.3, int(offsets[-1])) - 1, len(vocabulary) - 1)))
        n_spans = np.minimum(rng.poisson(1.5, n) + 1, lengths // 2)
        span_offsets = np.concatenate([[0], np.cumsum(n_spans)]).astype(np.int32)
        total = int(span_offsets[-1])
        # spans two words apart, one or two words long: never overlapping, always inside the sentence
        slot = np.arange(total) - np.repeat(span_offsets[:-1], n_spans)
        span_start = (2 * slot).astype(np.int32)
        span_end = (span_start + np.minimum(1 + rng.integers(0, 2, total), np.repeat(lengths, n_spans) - span_start)
                    ).astype(np.int32)
        drawn = np.minimum(rng.zipf(1.5, total) - 1, len(names) - 1)
        fine = np.array(names, dtype=object)[drawn]
        fine[rng.random(total) < entity_share] = ENTITY
        target = np.char.add("T", (drawn * 1000 + rng.integers(0, 1000, total)).astype(str))
        page_ids = start + np.arange(n)

        def lists(values) -> pa.ListArray:
            return pa.ListArray.from_arrays(pa.array(span_offsets), pa.array(values))

        table = pa.Table.from_arrays([
            pa.array(page_ids // 20, pa.int64()), pa.array([f"Page {p // 20}" for p in page_ids]),
            pa.array(page_ids % 20, pa.int32()), pa.ListArray.from_arrays(pa.array(offsets), words),
            lists(span_start), lists(span_end), lists(target.astype(object)), lists(fine.astype(object)),
            lists(np.where(fine == ENTITY, ENTITY, np.array(coarse, dtype=object)[drawn]).astype(object)),
        ], schema=TYPED_SCHEMA)
        pq.write_table(table, folder / f"{rank:05d}.parquet")
        tokens_total += int(offsets[-1])
        anchors_total += total
    return {"sentences": sentences, "tokens": tokens_total, "anchors": anchors_total, "categories": categories,
            "shards": len(list(folder.glob("*.parquet")))}


def _anonymous_rss_mb() -> int:
    """This process's resident anonymous memory (MB), without the file pages mapped by Arrow (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return round(int(line.split()[1]) / 1024)
    return -1


def run_post_extraction(work_dir: str | Path, *, merged_categories: int = 212, workers: int = 1) -> dict[str, object]:
    """The NER-BERT builder's steps after extraction on ``work_dir/stage2/typed`` (counting passes, the
    selection written shard by shard, the Hub folder streamed from it, tags to ids), each timed; and this
    process's peak RSS (run it in a fresh process: ``python benchmarks/wikipedia_scale.py post``)."""
    import resource
    import time

    from crossner_hf.publishing.dataset_folder import write_hub_folder_from_batches
    from crossner_hf.wikipedia.dbpedia import load_ontology
    from crossner_hf.wikipedia.nerbert_corpus import (TYPED_DIR, CorpusBuilder, CorpusOptions, hub_configs,
                                                      write_selection)

    work = Path(work_dir)
    seconds: dict[str, float] = {}
    heap: dict[str, int] = {}  # anonymous RSS (MB) after each step: the memory the steps hold
    peak: dict[str, int] = {}  # peak RSS (MB) by the end of each step, memory-mapped Arrow pages included
    started = time.perf_counter()
    # a builder's own work folder (its extract stage wrote nerbert/typed) or generated shards (stage2/typed)
    typed = work / TYPED_DIR if (work / TYPED_DIR).is_dir() else None
    builder = CorpusBuilder(work, CorpusOptions(merged_categories=merged_categories), ontology=load_ontology(ONTOLOGY),
                            typed_dir=typed, workers=workers)
    builder.count()
    seconds["count (passes 1-2)"] = time.perf_counter() - started
    peak["count (passes 1-2)"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    heap["count (passes 1-2)"] = _anonymous_rss_mb()
    mark = time.perf_counter()
    paths = write_selection(builder, work / "selection")
    seconds["select and write the selection (pass 3)"] = time.perf_counter() - mark
    peak["select and write the selection (pass 3)"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    heap["select and write the selection (pass 3)"] = _anonymous_rss_mb()
    mark = time.perf_counter()
    sizes = write_hub_folder_from_batches(hub_configs(paths), work / "dataset", {"license": "cc-by-sa-3.0"},
                                          "benchmark")
    seconds["Hub folder (tags to ids, Parquet shards)"] = time.perf_counter() - mark
    peak["Hub folder (tags to ids, Parquet shards)"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    heap["Hub folder (tags to ids, Parquet shards)"] = _anonymous_rss_mb()
    sizes = {f"{c} {split}": n for c, splits in sizes.items() for split, n in splits.items()}
    return {"seconds": {k: round(v, 1) for k, v in seconds.items()}, "total_seconds": round(time.perf_counter() - started, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "peak_rss_mb_after": peak,
            "anonymous_rss_mb_after": heap,
            "sizes": sizes,
            "categories": len(builder.before_balancing)}


# --------------------------------------------------------------------------- the peer, side by side

PROFILE_STAGES = {
    # a stage: the functions (file, name) whose cumulative time it is (disjoint call trees in the builder)
    "reading pages (bz2 + XML lines)": [("crossner_hf/wikipedia/dump.py", "iter_unit_pages")],
    "redirect pre-scan (bz2 + byte scan)": [("crossner_hf/wikipedia/dump.py", "iter_unit_redirects")],
    "wikitext to text + anchors": [("crossner_hf/wikipedia/wikitext.py", "wikitext_to_text")],
    "sentences (punkt) + words (Treebank)": [("crossner_hf/wikipedia/sentences.py", "anchor_sentences")],
    "typing (redirects + DBpedia lookups)": [("crossner_hf/wikipedia/redirects.py", "resolve_many"),
                                             ("crossner_hf/wikipedia/dbpedia.py", "categories")],
    "Parquet writing (datatrove writers)": [("datatrove/pipeline/writers/disk_base.py", "write")],
}


_CPU_PROFILE = (
    # a script run under cProfile on the CPU clock (a busy machine's waits are not the script's cost):
    # python -c _CPU_PROFILE STATS_FILE SCRIPT ARGS... (the script's folder first on the path, as when it runs
    # itself: python -c puts the working folder there, whose crossner_hf would shadow --before_root's)
    "import cProfile, runpy, sys, time\n"
    "stats, sys.argv = sys.argv[1], sys.argv[2:]\n"
    "sys.path[0] = str(__import__('pathlib').Path(sys.argv[0]).resolve().parent)\n"
    "profile = cProfile.Profile(time.process_time)\n"
    "try:\n"
    "    profile.runcall(runpy.run_path, sys.argv[0], run_name='__main__')\n"
    "except SystemExit as end:\n"
    "    if end.code:\n"
    "        raise\n"
    "profile.dump_stats(stats)\n")


_STARTUP = (
    # a builder script run as is, writing the process's CPU seconds when its first step starts (the start-up before
    # the first page) to a file: python -c _STARTUP FILE SCRIPT ARGS... (the builder's modules are imported by the
    # script anyway; a checkout without build.timed_step writes -1)
    "import runpy, sys, time\n"
    "report, sys.argv, first = sys.argv[1], sys.argv[2:], []\n"
    "sys.path[0] = str(__import__('pathlib').Path(sys.argv[0]).resolve().parent)\n"
    "try:\n"
    "    import crossner_hf.wikipedia.build as build\n"
    "    step = build.timed_step\n"
    "    def timed_step(timings, name):\n"
    "        if not first:\n"
    "            first.append(time.process_time())\n"
    "        return step(timings, name)\n"
    "    build.timed_step = timed_step\n"
    "except (ImportError, AttributeError):\n"
    "    pass\n"
    "try:\n"
    "    runpy.run_path(sys.argv[0], run_name='__main__')\n"
    "finally:\n"
    "    open(report, 'w').write(str(first[0] if first else -1))\n")


def _profile_stages(stats_file: Path) -> list[tuple[str, float]]:
    """Seconds by stage from a cProfile file of a builder run (see :data:`PROFILE_STAGES`), and the rest."""
    import pstats

    stats = pstats.Stats(str(stats_file)).stats  # (file, line, name) -> (calls, primitive, tottime, cumtime, callers)
    total = max(v[3] for v in stats.values())
    out = [(stage, sum(v[3] for (file, _, name), v in stats.items()
                       if any(file.endswith(f) and name == n for f, n in functions)))
           for stage, functions in PROFILE_STAGES.items()]
    out.append(("the rest: start-up, imports, datatrove, the corpus steps", total - sum(s for _, s in out)))
    return out


def compare_with_wikiextractor(dump_dir: str | Path, *, runs: int = 5, profile: bool = False,
                               before_root: str | Path | None = None) -> str:
    """WikiExtractor 3.1 and the whole NER-BERT builder, one worker each, interleaved (see ``peer`` above).

    ``before_root``: another checkout of the project (``git archive <commit> crossner_hf dataset_scripts
    model_cards trainer_recipes | tar -x -C DIR``) whose builder runs in the same rounds, the "before" of a change.
    """
    import os
    import resource
    import shutil
    import statistics
    import subprocess
    import tempfile
    import time

    from crossner_hf.wikipedia.dbpedia import build_types_db, load_ontology

    folder = Path(dump_dir)
    made = json.loads((folder / SCALE_FILE).read_text(encoding="utf-8"))
    dump, index, xml_mb = folder / "dump.xml.bz2", folder / "index.txt.bz2", made["xml_mb"]
    work = Path(tempfile.mkdtemp(prefix="peer-", dir=folder))
    types_db = work / "types.sqlite"
    build_types_db([folder / "instance_types.nt"], load_ontology(ONTOLOGY), types_db)
    base_env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}

    def builder(root: Path) -> tuple[Path, object]:
        return root, lambda out: [
            sys.executable, "-c", _STARTUP, f"{out}.startup",
            str(root / "dataset_scripts" / "nerbert_wikipedia.py"), "--dump", str(dump), "--index",
            str(index), "--ontology", str(ONTOLOGY), "--instance_types", str(folder / "instance_types.nt"),
            "--types_db", str(types_db), "--output_dir", str(out), "--nltk_data", str(SHARED / "nltk_data"),
            "--workers", "1"]

    methods = {"WikiExtractor 3.1 --links, 1 process": (ROOT, lambda out: [
        sys.executable, "-m", "wikiextractor.WikiExtractor", str(dump), "-o", str(out), "--links", "--processes", "1",
        "-q"]), "whole NER-BERT builder, 1 worker": builder(ROOT)}
    if before_root is not None:
        methods["whole NER-BERT builder, 1 worker, before (--before_root)"] = builder(Path(before_root).resolve())

    def timed(command: list[str], root: Path) -> tuple[float, float]:
        """Wall seconds and CPU seconds (user + system, the process and its children) of a command."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, env={**base_env, "PYTHONPATH": str(root)}, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime

    names = list(methods)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    steps: dict[str, list[dict[str, float]]] = {name: [] for name in names[1:]}
    startup: dict[str, list[float]] = {name: [] for name in names[1:]}
    load_before = os.getloadavg()
    for run in range(runs):
        for number, (name, (root, command)) in enumerate(methods.items()):
            out = work / f"m{number}-{run}"
            wall, used = timed(command(out), root)
            seconds[name].append(wall)
            cpu[name].append(used)
            print(f"run {run + 1}: {name}: {wall:.2f} s, CPU {used:.2f} s (load {os.getloadavg()[0]:.1f})",
                  file=sys.stderr)
            if name in steps:
                steps[name].append(json.loads((Path(f"{out}.work") / "timings.json").read_text()))
                startup[name].append(float(Path(f"{out}.startup").read_text()))
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(f"{out}.work", ignore_errors=True)
    load_after = os.getloadavg()
    peer, peer_cpu = statistics.median(seconds[names[0]]), statistics.median(cpu[names[0]])
    lines = [f"Input: {folder.name}, {made['pages']:,} pages ({made['copies']} renamed copies of the sample), "
             f"{xml_mb:,.1f} MB of XML, {made['bz2_mb']:,.1f} MB bz2 multistream; {os.cpu_count()} cores, load average "
             f"{load_before[0]:.1f} before / {load_after[0]:.1f} after; {runs} interleaved runs, medians, wall time "
             "including interpreter start; CPU: user + system seconds of the process and its children (less "
             "sensitive to a busy machine than wall time).", "",
             "| method | median wall s | all runs s | MB XML/s | x WikiExtractor | median CPU s | MB XML/CPU s | "
             "x WikiExtractor (CPU) |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for name in names:
        median, median_cpu = statistics.median(seconds[name]), statistics.median(cpu[name])
        lines.append(f"| {name} | {median:.2f} | {' '.join(f'{v:.1f}' for v in seconds[name])} | "
                     f"{xml_mb / median:.2f} | {peer / median:.2f} | {median_cpu:.2f} | {xml_mb / median_cpu:.2f} | "
                     f"{peer_cpu / median_cpu:.2f} |")
    for name, found in steps.items():
        lines += ["", f"{name}: steps, median wall s: " + ", ".join(
            f"{step} {statistics.median(t.get(step, 0.0) for t in found):.2f}" for step in found[0])]
        lines += [f"{name}: start-up, CPU s before its first step (interpreter, imports, the flags): median "
                  f"{statistics.median(startup[name]):.2f} ({' '.join(f'{v:.2f}' for v in startup[name])})"]
    if profile:
        for number, (name, (root, command)) in enumerate(methods.items()):
            if name not in steps:
                continue
            stats_file = work / f"builder-{number}.prof"
            done = subprocess.run([sys.executable, "-c", _CPU_PROFILE, str(stats_file), *command(work / f"p{number}")[4:]],
                                  env={**base_env, "PYTHONPATH": str(root)}, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True)
            if done.returncode:  # the timed runs above stand; say why this profile is missing
                lines += ["", f"{name}: the profiled run failed: {done.stderr.strip().splitlines()[-1:]}"]
                continue
            stages = _profile_stages(stats_file)
            total = sum(s for _, s in stages)
            lines += ["", f"{name}: one run under cProfile, CPU seconds (its overhead inflates the Python-heavy "
                      "stages):", "",
                      "| stage | s | share |", "|---|---:|---:|"]
            lines += [f"| {stage} | {s:.2f} | {100 * s / total:.0f}% |" for stage, s in stages]
    shutil.rmtree(work, ignore_errors=True)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    dump = sub.add_parser("dump", allow_abbrev=False, help="a multistream dump, its index and instance types")
    dump.add_argument("--dump_mb", type=float, required=True, help="MB of XML to generate (whole sample copies)")
    dump.add_argument("--pages_per_stream", type=int, default=100)
    dump.add_argument("--output_dir", required=True)
    typed = sub.add_parser("typed", allow_abbrev=False, help="stage-2 typed-sentence shards")
    typed.add_argument("--sentences", type=int, required=True)
    typed.add_argument("--categories", type=int, default=315)
    typed.add_argument("--shard_rows", type=int, default=500_000)
    typed.add_argument("--output_dir", required=True)
    post = sub.add_parser("post", allow_abbrev=False, help="time the corpus steps on typed shards (peak RSS too)")
    post.add_argument("--work_dir", required=True, help="a folder holding stage2/typed (from the typed command) or "
                      "a builder's work folder (nerbert/typed)")
    post.add_argument("--merged_categories", type=int, default=212)
    post.add_argument("--workers", type=int, default=1, help="processes for the corpus passes (the builder uses "
                      "all cores)")
    peer = sub.add_parser("peer", allow_abbrev=False, help="WikiExtractor 3.1 and the whole builder, one worker "
                          "each, interleaved; MB/s and the ratio")
    peer.add_argument("--dump_dir", required=True, help="a folder made by the dump command")
    peer.add_argument("--runs", type=int, default=5)
    peer.add_argument("--profile", action="store_true", help="and one builder run under cProfile, by stage")
    peer.add_argument("--before_root", help="another checkout of the project whose builder runs in the same rounds")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.what == "peer":
        print(compare_with_wikiextractor(args.dump_dir, runs=args.runs, profile=args.profile,
                                         before_root=args.before_root))
        return 0
    if args.what == "post":
        result = run_post_extraction(args.work_dir, merged_categories=args.merged_categories, workers=args.workers)
    elif args.what == "dump":
        result = make_scaled_dump(args.output_dir, args.dump_mb, pages_per_stream=args.pages_per_stream)
    else:
        result = make_typed_shards(args.output_dir, args.sentences, categories=args.categories,
                                   shard_rows=args.shard_rows)
    for key, value in result.items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
