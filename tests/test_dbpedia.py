"""DBpedia Ontology typing of link targets, checked on the shared DBpedia files.

The facts asserted here were read off the files by hand:

* wiki subset: Abraham_Lincoln has OfficeHolder and Politician (both depth 3, under Person):
  the tie goes to OfficeHolder (smaller name); Alabama has AdministrativeRegion (4),
  Settlement (3) and Location (not an ontology class); West_Indies has Continent, Country and
  Settlement (all depth 3: Continent); Tatarstan adds Country to Alabama's set; Anarchism has
  MusicGenre (3, under TopicalConcept) and Organisation (2); Aristotle is a Philosopher;
  Aberdeen_F.C. a SoccerClub (SportsTeam < Organisation).
* Turtle sample: Anarchism is typed owl:Thing only; Abraham_Lincoln__1..3 are intermediate nodes.
"""

from __future__ import annotations

import bz2
import gzip
import multiprocessing
import os
import pickle
import re
import sqlite3
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from crossner_hf.wikipedia.dbpedia import (
    ENTITY,
    DBpediaTypes,
    Ontology,
    build_types_db,
    iter_type_triples,
    load_ontology,
)

ROOT = Path(__file__).resolve().parents[1]
DBPEDIA = Path(os.environ.get("CROSSNER_SHARED_DIR", ROOT.parent / "shared")) / "data" / "dbpedia"
OWL = DBPEDIA / "dbpedia_2016-10.owl"
TSV = DBPEDIA / "dbpedia_types_hierarchy.tsv"
SUBSET = DBPEDIA / "instance_types_en_wiki_subset.nt"
SAMPLE = DBPEDIA / "instance_types_en_sample.ttl"

pytestmark = pytest.mark.skipif(
    not OWL.is_file(), reason=f"shared DBpedia files not found in {DBPEDIA} (set CROSSNER_SHARED_DIR)"
)
T = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def triple(title: str, cls: str) -> str:
    obj = cls if cls.startswith("<") else f"<http://dbpedia.org/ontology/{cls}>"
    return f"<http://dbpedia.org/resource/{title}> {T} {obj} .\n"


@pytest.fixture(scope="module")
def ontology() -> Ontology:
    return load_ontology(OWL)


@pytest.fixture(scope="module")
def subset_db(ontology, tmp_path_factory) -> Path:
    return build_types_db(SUBSET, ontology, tmp_path_factory.mktemp("db") / "subset.sqlite", progress=False)


@pytest.fixture(scope="module")
def sample_db(ontology, tmp_path_factory) -> Path:
    return build_types_db([SAMPLE], ontology, tmp_path_factory.mktemp("db") / "sample.sqlite", progress=False)


def test_owl_hierarchy(ontology):
    assert len(ontology) == 760
    roots = [c for c in ontology.classes if ontology.parent(c) is None]
    assert len(roots) == 50 and {"Agent", "Place", "Work", "Event"} <= set(roots)
    assert ontology.ancestors("Philosopher") == ["Philosopher", "Person", "Agent"]
    assert ontology.ancestors("dbo:Philosopher", include_self=False) == ["Person", "Agent"]
    assert ontology.ancestors("SoccerClub") == ["SoccerClub", "SportsTeam", "Organisation", "Agent"]
    assert [ontology.depth(c) for c in ("Place", "Person", "Philosopher", "AdministrativeRegion")] == [1, 2, 3, 4]
    assert ontology.is_a("http://dbpedia.org/ontology/City", "Place") and not ontology.is_a("City", "Person")
    # schema.org / DUL super-classes are not parents; the first dbo one is.
    assert ontology.parent("Band") == "Group" and ontology.parent("MusicalArtist") == "Artist"
    assert ontology.parent("Library") == "EducationalInstitution"  # the OWL lists Building second
    assert max(ontology.depth(c) for c in ontology.classes) == 7
    with pytest.raises(KeyError, match="NoSuchClass"):
        ontology.depth("NoSuchClass")


def test_owl_and_tsv_agree_on_depths(ontology):
    table = load_ontology(TSV)
    common = set(ontology.classes) & set(table.classes)
    assert set(table.classes) - common == {"MedicalSpecialty"}  # only in the TSV (a root there)
    assert set(ontology.classes) - common == set()
    depth_mismatches = {c: (ontology.depth(c), table.depth(c)) for c in common if ontology.depth(c) != table.depth(c)}
    assert depth_mismatches == {}
    # The one parent disagreement: Library has two dbo parents, the TSV keeps the other.
    parent_mismatches = {c: (ontology.parent(c), table.parent(c)) for c in common
                         if ontology.parent(c) != table.parent(c)}
    assert parent_mismatches == {"Library": ("EducationalInstitution", "Building")}
    assert (ontology.coarse("Library"), table.coarse("Library")) == ("organisation", "location")


def test_cycles_and_dangling_parents_are_errors(tmp_path):
    tsv = tmp_path / "cycle.tsv"
    tsv.write_text("Type\tDepth\tParent\ndbo:A\t1\tdbo:C\ndbo:B\t2\tdbo:A\ndbo:C\t3\tdbo:B\ndbo:D\t1\towl:Thing\n")
    with pytest.raises(ValueError, match=r"cycle.tsv: rdfs:subClassOf cycle (A -> C -> B -> A)"):
        load_ontology(tsv)
    owl = tmp_path / "cycle.owl"
    owl.write_text(
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
        'xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:owl="http://www.w3.org/2002/07/owl#">\n'
        + "".join(f'<owl:Class rdf:about="http://dbpedia.org/ontology/{c}"><rdfs:subClassOf '
                  f'rdf:resource="http://dbpedia.org/ontology/{p}"/></owl:Class>\n'
                  for c, p in (("X", "Y"), ("Y", "X"), ("Z", "X")))
        + "</rdf:RDF>\n")
    with pytest.raises(ValueError, match=r"cycle.owl: rdfs:subClassOf cycle (X -> Y -> X|Y -> X -> Y)"):
        load_ontology(owl)
    with pytest.raises(ValueError, match="has parent 'Ghost'.*declare 'Ghost'"):
        Ontology({"A": "Ghost"})
    bad = tmp_path / "bad.tsv"
    bad.write_text("Type\tDepth\tParent\ndbo:A\tone\towl:Thing\n")
    with pytest.raises(ValueError, match=r"bad.tsv:2: "):
        load_ontology(bad)
    with pytest.raises(ValueError, match="unknown ontology format"):
        load_ontology(tmp_path / "x.json")


def test_most_specific_class_on_the_wiki_subset(subset_db, ontology):
    types = DBpediaTypes(subset_db)
    assert types.most_specific("Abraham_Lincoln") == "OfficeHolder"  # tie with Politician (depth 3)
    assert types.category("abraham Lincoln#Presidency") == "officeholder"
    assert "Person" in types.ancestors("OfficeHolder") and types.coarse_category("Abraham Lincoln") == "person"
    assert types.category("Alabama") == "administrativeregion"
    assert "Place" in types.ancestors("AdministrativeRegion") and types.coarse_category("Alabama") == "location"
    assert (types.category("Aristotle"), types.coarse_category("Aristotle")) == ("philosopher", "person")
    assert (types.category("Aberdeen F.C."), types.coarse_category("Aberdeen_F.C.")) == ("soccerclub", "organisation")
    assert types.most_specific("West_Indies") == "Continent"  # Continent, Country, Settlement: all depth 3
    assert types.most_specific("Tatarstan") == "AdministrativeRegion"  # 4 types, Location unknown
    assert types.most_specific("Anarchism") == "MusicGenre"  # deeper than Organisation, another branch
    assert types.coarse_category("Anarchism") == ENTITY
    assert types.category("No such page anywhere") == ENTITY and types.most_specific("") is None
    # Every subject agrees with the in-memory rule.
    by_subject: dict[str, list[str]] = {}
    for subject, obj in iter_type_triples(SUBSET):
        by_subject.setdefault(subject[len("http://dbpedia.org/resource/"):], []).append(obj)
    assert len(by_subject) == 3825
    expected = [ontology.most_specific(objs) for objs in by_subject.values()]
    assert [types.most_specific(t) for t in by_subject] == expected
    assert types.categories(list(by_subject)) == [c.lower() if c else ENTITY for c in expected]
    assert types.categories(list(by_subject), coarse=True) == [ontology.coarse(c) for c in expected]
    meta = types.metadata
    assert meta["counts"]["triples"] == 6238 and meta["counts"]["entities_typed"] == len(types) == 3824
    assert meta["unknown_classes"] == {"Location": 1200, "MedicalSpecialty": 4, "Academic": 3}
    assert types.ontology.depth("AdministrativeRegion") == 4 and len(types.ontology) == 760


def test_turtle_sample_owl_thing_and_intermediate_nodes(sample_db):
    types = DBpediaTypes(sample_db)
    assert types.category("Anarchism") == ENTITY and types.most_specific("Anarchism") is None  # owl:Thing only
    assert types.category("Aristotle") == "philosopher" and types.category("Alabama") == "administrativeregion"
    assert types.most_specific("Abraham_Lincoln") == "OfficeHolder"
    assert types.most_specific("Abraham Lincoln 1") is None  # Abraham_Lincoln__1 was skipped, not folded
    counts = types.metadata["counts"]
    assert counts["intermediate_subjects"] == 8 and counts["non_dbo_objects"] == 29 and counts["lines"] == 60


def test_tie_rule_across_files_and_orders(ontology, tmp_path):
    a, b = tmp_path / "a.nt", tmp_path / "b.nt"
    a.write_text(triple("Twin", "Settlement") + triple("Other", "Person") + triple("Twin", "Place"))
    b.write_text(triple("Other", "Politician") + triple("Twin", "Country") + triple("Twin", "<http://schema.org/Place>"))
    assert ontology.depth("Settlement") == ontology.depth("Country") == 3
    for order in ([a, b], [b, a]):
        types = DBpediaTypes(build_types_db(order, ontology, tmp_path / "t.sqlite", progress=False))
        assert (types.most_specific("Twin"), types.most_specific("Other")) == ("Country", "Politician")
        types.close()


def test_compressed_input_equals_plain(ontology, subset_db, tmp_path):
    def rows(path: Path) -> list[tuple[str, int]]:
        with sqlite3.connect(path) as conn:
            return conn.execute("SELECT title, class_id FROM types ORDER BY title").fetchall()

    data = SUBSET.read_bytes()
    for name, compress in (("s.nt.bz2", bz2.compress), ("s.nt.gz", gzip.compress)):
        (tmp_path / name).write_bytes(compress(data))
        built = build_types_db(tmp_path / name, ontology, tmp_path / f"{name}.sqlite", progress=False)
        assert rows(built) == rows(subset_db) and len(rows(built)) == 3824


def test_turtle_forms(ontology, tmp_path):
    ttl = tmp_path / "forms.ttl"
    ttl.write_text(
        "# started 2016-10-20\n"
        "@prefix dbo: <http://dbpedia.org/ontology/> .\n"
        "@prefix dbr: <http://dbpedia.org/resource/> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        "dbr:Ada_Lovelace a dbo:Scientist , dbo:Person ;\n"
        '    rdfs:label "Ada Lovelace"@en ;\n'
        "    a <http://www.w3.org/2002/07/owl#Thing> .\n"
        "<http://dbpedia.org/resource/Bras\\u00EDlia> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> dbo:City .\n"
        "dbr:Rock_%26_roll a dbo:MusicGenre . # trailing comment\n"
        "<http://dbpedia.org/resource/Plain> a dbo:Country ;\n"
        "    .\n"
    )
    types = DBpediaTypes(build_types_db(ttl, ontology, tmp_path / "f.sqlite", progress=False))
    assert types.most_specific("Ada Lovelace") == "Scientist"
    assert types.most_specific("Brasília") == "City"
    assert types.most_specific("Rock & roll") == "MusicGenre"
    assert types.most_specific("Plain") == "Country"
    assert types.metadata["counts"]["triples"] == 6  # rdf:type ones: 3 + 1 + 1 + 1


def test_bad_lines_name_file_and_line(ontology, tmp_path):
    bad = tmp_path / "bad.nt"
    bad.write_text(triple("Good", "City") + "\n" + "this is not a triple\n" + triple("Also_good", "Person"))
    with pytest.raises(ValueError, match=rf"{re.escape(str(bad))}:3: cannot parse 'this is not a triple'.*skip_bad"):
        build_types_db(bad, ontology, tmp_path / "bad.sqlite", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.nt"]  # no DB, no temp files left
    types = DBpediaTypes(build_types_db(bad, ontology, tmp_path / "bad.sqlite", skip_bad_lines=True, progress=False))
    assert types.metadata["counts"]["bad_lines"] == 1
    assert types.categories(["Good", "Also good"]) == ["city", "person"]
    unfinished = tmp_path / "unfinished.ttl"
    unfinished.write_text("<http://dbpedia.org/resource/X> a\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(unfinished))}:1: .*ends inside a statement"):
        list(iter_type_triples(unfinished))
    undeclared = tmp_path / "undeclared.ttl"
    undeclared.write_text(triple("A", "City") + "dbr:B a dbo:City .\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(undeclared))}:2: undeclared prefix dbr:"):
        list(iter_type_triples(undeclared))


def test_batched_lookup_matches_single_and_spans_chunks(subset_db):
    types = DBpediaTypes(subset_db, cache_size=0)
    titles = [line.split()[0][29:-1] for line in SUBSET.read_text(encoding="utf-8").splitlines()]
    titles += [f"Missing page {i}" for i in range(700)] + ["", "aristotle"]
    assert len(titles) > 2 * DBpediaTypes._CHUNK
    assert types.categories(titles) == [types.category(t) for t in titles]
    assert types.categories(titles, coarse=True) == [types.coarse_category(t) for t in titles]
    assert DBpediaTypes(subset_db).both_categories(titles) == [(types.category(t), types.coarse_category(t))
                                                               for t in titles]


_INHERITED: dict[str, DBpediaTypes] = {}


def _child_lookup(types: DBpediaTypes | None, titles: list[str]) -> list[str]:
    types = types or _INHERITED["types"]  # None: use the (connected) object inherited by fork
    return types.categories(titles) + [types.coarse_category(titles[0])]


def test_picklable_and_usable_in_other_processes(subset_db):
    types = DBpediaTypes(subset_db)
    assert types.category("Aristotle") == "philosopher"  # connected before pickling
    clone = pickle.loads(pickle.dumps(types))
    assert clone._conn is None and clone.category("Alabama") == "administrativeregion"
    expected = ["philosopher", "officeholder", ENTITY, "person"]
    titles = ["Aristotle", "Abraham Lincoln", "Nowhere"]
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        assert pool.submit(_child_lookup, types, titles).result() == expected
    if sys.platform.startswith("linux"):  # a forked child must open its own connection
        _INHERITED["types"] = types
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            assert pool.submit(_child_lookup, None, titles).result() == expected
        _INHERITED.clear()
    assert types.category("Aristotle") == "philosopher"


def test_opening_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="build_types_db"):
        DBpediaTypes(tmp_path / "missing.sqlite")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(ValueError, match="not a DBpedia types DB"):
        DBpediaTypes(other).category("X")


def test_benchmark_run_small(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from dbpedia_types import markdown, run
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    result = run(2000, tmp_path, ontology_path=OWL, n_lookups=2000)
    assert 1700 <= result["entities_typed"] <= 1900 and 0 < result["peak_rss_mb"] < 3000
    assert 0 < result["lookup_us_single"] < 1000 and "| build |" in markdown(result)
