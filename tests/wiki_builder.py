"""Running the NER-BERT corpus builder as a user does: a script in its own process.

datatrove's local executor starts workers with forkserver, so the builder runs from a file with an
``if __name__ == "__main__":`` guard, never inside the pytest process. Shared by the Wikipedia tests
(kill-and-resume, Ray, domain corpora) and the NER-BERT pre-training tests (through the
``sample_corpus`` fixture in ``conftest.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]


def build_script(out: Path, dump: Path, wiki: dict[str, Path], extra: str = "") -> str:
    """The source of a script that builds the corpus from ``dump`` into ``out`` with one worker."""
    return textwrap.dedent(f"""
        import sys
        from crossner_hf.cli import run_command
        from crossner_hf.commands.nerbert_wikipedia import main, make_parser
        if __name__ == "__main__":
            sys.exit(run_command(make_parser, main, [
                "--dump", {str(dump)!r}, "--ontology", {str(wiki["owl"])!r},
                "--instance_types", {str(wiki["types"])!r}, "--output_dir", {str(out)!r},
                "--nltk_data", {str(wiki["nltk"])!r}, "--workers", "1", {extra}]))
        """)


def run_builder(tmp_path: Path, name: str, script: str, env: dict[str, str] | None = None,
                **popen) -> subprocess.Popen:
    """Start ``script`` (saved as ``tmp_path/name.py``) in a new session; stderr goes to ``name.log``.
    ``env`` adds to (or overrides) this process's environment."""
    path = tmp_path / f"{name}.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.Popen([sys.executable, str(path)], env=env, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / f"{name}.log", "w"), start_new_session=True, **popen)


def dataset_tables(out: Path) -> dict[str, list]:
    """Every Parquet file of a built dataset folder, as rows, keyed by its relative path."""
    return {str(p.relative_to(out)): pq.read_table(p).to_pylist() for p in sorted((out / "data").rglob("*.parquet"))}
