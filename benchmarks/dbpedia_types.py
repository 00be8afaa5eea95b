"""DBpedia types DB: build time, peak RSS, size and lookup cost on synthetic instance types.

Writes two N-Triples files like DBpedia's own pair: ``instance_types`` (each entity's class,
owl:Thing for half of them, ``__N`` intermediate nodes for 2%) and
``instance_types_transitive`` (1-2 ancestors of that class, plus an unrelated class for a
quarter of the entities), so the builder must merge an entity's types across files. 10%
of the entities are typed owl:Thing only. Classes are drawn from the real ontology. The
build runs in a child interpreter whose own peak RSS (``ru_maxrss``) is reported.

Usage:
    python benchmarks/dbpedia_types.py --entities 5000000 [--workdir /tmp/dbt] [--keep]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_ONTOLOGY = ROOT.parent / "shared" / "data" / "dbpedia" / "dbpedia_2016-10.owl"
_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_THING = "<http://www.w3.org/2002/07/owl#Thing>"
_SYLLABLES = ["ka", "lo", "mi", "ra", "ten", "vo", "an", "der", "sul", "ber", "ti", "go", "mar", "el", "is", "ton"]


def _words() -> list[str]:
    rng = random.Random(1)
    return ["".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize() for _ in range(4096)]


def title_of(i: int, words: list[str]) -> str:
    """A deterministic, unique, Wikipedia-like title for entity ``i`` (no need to keep 5M in memory)."""
    return f"{words[i % 4093]}_{words[(i * 7919) % 4091].lower()}_({i})"


def write_triples(n_entities: int, workdir: Path, ontology: Any, seed: int = 0) -> tuple[list[Path], int]:
    """The two synthetic N-Triples files and their total number of lines."""
    rng = random.Random(seed)
    words = _words()
    classes = list(ontology.classes)
    ancestors = {c: ontology.ancestors(c, include_self=False) for c in classes}
    paths = [workdir / "instance_types_en.nt", workdir / "instance_types_transitive_en.nt"]
    lines = 0
    res, dbo = "<http://dbpedia.org/resource/", "<http://dbpedia.org/ontology/"
    with open(paths[0], "w", encoding="utf-8") as direct, open(paths[1], "w", encoding="utf-8") as transitive:
        out_d: list[str] = []
        out_t: list[str] = []
        for i in range(n_entities):
            subject = f"{res}{title_of(i, words)}> {_TYPE} "
            if rng.random() < 0.10:
                out_d.append(f"{subject}{_THING} .\n")
                continue
            cls = rng.choice(classes)
            out_d.append(f"{subject}{dbo}{cls}> .\n")
            if rng.random() < 0.5:
                out_d.append(f"{subject}{_THING} .\n")
            if rng.random() < 0.02:
                out_d.append(f"{res}{title_of(i, words)}__1> {_TYPE} {dbo}TimePeriod> .\n")
            chain = ancestors[cls]
            for anc in rng.sample(chain, min(len(chain), rng.randint(1, 2))):
                out_t.append(f"{subject}{dbo}{anc}> .\n")
            if rng.random() < 0.25:
                out_t.append(f"{subject}{dbo}{rng.choice(classes)}> .\n")
            if len(out_d) >= 50_000:
                lines += len(out_d) + len(out_t)
                direct.writelines(out_d)
                transitive.writelines(out_t)
                out_d, out_t = [], []
        lines += len(out_d) + len(out_t)
        direct.writelines(out_d)
        transitive.writelines(out_t)
    return paths, lines


# Run in a fresh interpreter (not multiprocessing): it works however this module was imported,
# and ru_maxrss of that process alone (KiB on Linux) is the build's own peak, not the parent's.
_CHILD = """
import json, resource, sys, time
from crossner_hf.wikipedia.dbpedia import build_types_db, load_ontology
files, ontology_path, db_path = json.loads(sys.argv[1])
start = time.perf_counter()
build_types_db(files, load_ontology(ontology_path), db_path, progress=False)
print(json.dumps({"build_s": time.perf_counter() - start,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _per_call_us(fn: Any, items: list[Any], block: int = 100) -> float:
    """Median over blocks of the mean cost of one call, in microseconds (timer cost amortised)."""
    costs = []
    for i in range(0, len(items) - block + 1, block):
        chunk = items[i:i + block]
        t = time.perf_counter_ns()
        for item in chunk:
            fn(item)
        costs.append((time.perf_counter_ns() - t) / block / 1000)
    return statistics.median(costs)


def run(n_entities: int, workdir: str | Path, *, ontology_path: str | Path = DEFAULT_ONTOLOGY,
        n_lookups: int = 100_000, seed: int = 0) -> dict[str, Any]:
    """Write ``n_entities`` synthetic entities, build the DB in a child process, time lookups."""
    from crossner_hf.wikipedia.dbpedia import DBpediaTypes, load_ontology

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    ontology = load_ontology(ontology_path)
    t = time.perf_counter()
    files, n_lines = write_triples(n_entities, workdir, ontology, seed)
    write_s = time.perf_counter() - t
    db_path = workdir / "dbpedia_types.sqlite"
    args = json.dumps([[str(f) for f in files], str(ontology_path), str(db_path)])
    done = subprocess.run([sys.executable, "-c", _CHILD, args], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"the build failed:\n{done.stderr[-3000:]}")
    child = json.loads(done.stdout.splitlines()[-1])

    rng = random.Random(seed + 1)
    words = _words()
    # Half hits or owl:Thing-only entities, half titles that were never written.
    sample = [title_of(rng.randrange(n_entities) if rng.random() < 0.5 else n_entities + rng.randrange(10**6), words)
              for _ in range(n_lookups)]
    uncached = DBpediaTypes(db_path, cache_size=0)
    single = _per_call_us(uncached.category, sample)
    cached = DBpediaTypes(db_path, cache_size=n_lookups)
    cold = _per_call_us(cached.category, sample)
    warm = _per_call_us(cached.category, sample)
    # One call per "page" of 100 anchors, the corpus builder's pattern.
    pages = [sample[i:i + 100] for i in range(0, len(sample), 100)]
    batched = _per_call_us(uncached.categories, pages, block=1) / 100
    hits = sum(c != "ENTITY" for c in uncached.categories(sample))
    return {
        "entities": n_entities,
        "triple_lines": n_lines,
        "input_mb": sum(f.stat().st_size for f in files) / 2**20,
        "write_s": write_s,
        "build_s": child["build_s"],
        "peak_rss_mb": child["peak_rss_mb"],
        "db_mb": db_path.stat().st_size / 2**20,
        "entities_typed": len(uncached),
        "lookups": n_lookups,
        "hit_rate": hits / n_lookups,
        "lookup_us_single": single,
        "lookup_us_single_lru_cold": cold,
        "lookup_us_single_lru_warm": warm,
        "lookup_us_batched": batched,
    }


def markdown(result: dict[str, Any]) -> str:
    rows = [
        ("entities", f"{result['entities']:,}"),
        ("rdf:type lines (2 files)", f"{result['triple_lines']:,} ({result['input_mb']:.0f} MB)"),
        ("entities typed", f"{result['entities_typed']:,}"),
        ("build", f"{result['build_s']:.1f} s"),
        ("peak RSS of the build", f"{result['peak_rss_mb']:.0f} MB"),
        ("DB size", f"{result['db_mb']:.1f} MB"),
        (f"category(), no cache ({result['hit_rate']:.0%} hits)", f"{result['lookup_us_single']:.2f} µs"),
        ("category(), LRU cold / warm", f"{result['lookup_us_single_lru_cold']:.2f} / "
                                        f"{result['lookup_us_single_lru_warm']:.2f} µs"),
        ("categories() per title, pages of 100", f"{result['lookup_us_batched']:.2f} µs"),
    ]
    return "\n".join(["| measure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entities", type=int, default=20_000, help="synthetic entities (default 20000)")
    parser.add_argument("--workdir", default=None, help="where files and the DB go (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir's files")
    parser.add_argument("--ontology", default=str(DEFAULT_ONTOLOGY), help="DBpedia Ontology .owl or .tsv")
    parser.add_argument("--lookups", type=int, default=100_000, help="titles to look up (default 100000)")
    opts = parser.parse_args(argv)
    if opts.workdir:
        result = run(opts.entities, opts.workdir, ontology_path=opts.ontology, n_lookups=opts.lookups)
    else:
        with tempfile.TemporaryDirectory(prefix="dbpedia_types_") as tmp:
            result = run(opts.entities, tmp, ontology_path=opts.ontology, n_lookups=opts.lookups)
            if opts.keep:
                print(f"(files in {tmp} are removed anyway; pass --workdir to keep them)")
    print(markdown(result))


if __name__ == "__main__":
    main()
