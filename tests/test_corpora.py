"""DAPT corpora: the entity matcher, corpus levels, tokenising/packing and the build script.

The corpus-level tests run on real CrossNER sentences with an entity list taken from the
labels of the first 30 politics train sentences; every expected selection below was
checked by reading the sentences (the reasons are in the comments).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from datasets import Dataset, load_dataset
from huggingface_hub import DatasetCard

from crossner_hf.data.conll import read_conll
from crossner_hf.corpora import (
    EntityMatcher,
    EntityMention,
    ModelMentionFinder,
    build_corpus_levels,
    entity_list_from_conll,
    find_mentions_with_model,
    load_entity_list,
    load_text_corpus,
    pack_sequences,
    save_entity_list,
    specialised_types,
    tokenize_corpus,
)
from crossner_hf.corpora.levels import MENTION_FEATURES
from crossner_hf.publishing.dataset_folder import write_hub_dataset_folder
from crossner_hf.data.labels import LABELS, entity_types

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------- fixtures


def _sentences(data_dir: Path, config: str, split: str) -> list[dict]:
    return read_conll(data_dir / config / f"{split}.txt", LABELS[config], strict=True)


def _text(sentence: dict) -> str:
    return " ".join(sentence["tokens"])


@pytest.fixture(scope="module")
def politics30(crossner_data_dir) -> list[dict]:
    return _sentences(crossner_data_dir, "politics", "train")[:30]


@pytest.fixture(scope="module")
def entities(politics30) -> dict[str, str]:
    return entity_list_from_conll(politics30)


@pytest.fixture(scope="module")
def mixed_corpus(crossner_data_dir, politics30) -> list[str]:
    """Rows 0-29 politics train[:30], 30-35 politics dev[30:36], 36-40 conll2003 train[15:20]."""
    dev = _sentences(crossner_data_dir, "politics", "dev")[30:36]
    news = _sentences(crossner_data_dir, "conll2003", "train")[15:20]
    return [_text(s) for s in politics30 + dev + news]


# Hand-checked against the sentences (entity list = labels of politics train[:30]):
#   0-29: every one has >= 3 mentions and a politician/party/election (its own labels).
#   30 (dev 30): its elections (1983, February 1974) and the Ulster Unionist Party are not
#       in the list -> no mention.
#   31: "Christian Democrat component" -> Democrat (misc), "French Democracy" -> Democracy
#       (misc); "Social Democrats" is not "Democrat" (word boundary) -> 2 mentions, no
#       specialised type: entity level only.
#   32: Italian Liberal Party, Liberals, Forza Italia (parties) -> entity and task.
#   33: Italy (location), "Democratic Party of the Left" -> Democratic Party -> both.
#   34: "Solidary Democracy" -> Democracy (misc), "Italy is Popular" -> Italy -> entity only.
#   35: Italian Social Movement (party), Christian Democrats (misc) -> both.
#   36 (conll 15): British twice (misc; "German" is not "Germany") -> entity only.
#   37-40: one Germany or one British each -> neither.
EXPECTED_ENTITY = [*range(30), 31, 32, 33, 34, 35, 36]
EXPECTED_TASK = [*range(30), 32, 33, 35]

# Politics train[:30] alone, k=5: the sentences with >= 5 mentions. Left out, with 3-4
# mentions: 0, 2, 3, 8, 9, 12, 15, 25, 26. Sentence 29 has 4 labeled spans plus
# "Bundestag", listed from sentence 28, so it is in.
EXPECTED_K5 = [1, 4, 5, 6, 7, 10, 11, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24, 27, 28, 29]
# ... and with specialised_types=["election"]: the sentences naming an election.
EXPECTED_ELECTION = [3, 4, 8, 9, 10, 14, 15, 17, 18, 19, 20, 23, 24]


# ----------------------------------------------------------------------------- matcher


def test_word_boundaries():
    m = EntityMatcher({"Iran": "country", "U.S.": "country", "Künast": "politician"})
    assert m.find("Iranian oil") == []
    assert m.find("pre-Iran") == [EntityMention(4, 8, "Iran", "country")]
    assert [x.surface for x in m.find("Iran's oil and the U.S. Senate (Iran)")] == ["Iran", "U.S.", "Iran"]
    # A surface ending in punctuation cannot end inside a word, whatever follows it.
    assert [x.surface for x in m.find("U.S.A")] == ["U.S."]
    assert m.find("Renate Künast.") == [EntityMention(7, 13, "Künast", "politician")]
    assert m.find("Künaster") == []
    assert m.find("SIran") == []


def test_leftmost_longest_and_invalid_longer_match_does_not_block():
    m = EntityMatcher({"New York": "location", "York City": "location", "New York City": "location",
                       "City Hall": "location", "Iran": "country", "Iran Air": "organisation"})
    # Longest at the leftmost start wins, the overlapping "City Hall" is dropped.
    assert [x.surface for x in m.find("New York City Hall")] == ["New York City"]
    m2 = EntityMatcher({"New York": "location", "York City": "location"})
    assert [x.surface for x in m2.find("New York City")] == ["New York"]
    # "Iran Air" inside "Iran Airways" fails the boundary test, so the shorter "Iran" stands.
    assert m.find("Iran Airways") == [EntityMention(0, 4, "Iran", "country")]
    assert [(x.surface, x.type) for x in m.find("Iran Air flew")] == [("Iran Air", "organisation")]


def test_case_sensitivity():
    ents = {"Labour": "politicalparty", "AN": "politicalparty"}
    assert EntityMatcher(ents).find("labour and an ally") == []
    found = EntityMatcher(ents, case_sensitive=False).find("labour and an ally of LABOUR")
    assert [(x.start, x.end, x.surface) for x in found] == [(0, 6, "labour"), (11, 13, "an"), (22, 28, "LABOUR")]
    # A character whose lower case is longer must not shift offsets.
    assert EntityMatcher({"İzmir": "location"}, case_sensitive=False).find("in İZMIR now") == [
        EntityMention(3, 8, "İZMIR", "location")
    ]


def test_matcher_pickles_and_rejects_bad_input():
    import pickle

    m = EntityMatcher({"Obama": "politician"})
    clone = pickle.loads(pickle.dumps(m))
    assert clone.find("Obama spoke") == m.find("Obama spoke")
    assert clone.fingerprint == m.fingerprint
    assert m.fingerprint != EntityMatcher({"Obama": "politician"}, case_sensitive=False).fingerprint
    with pytest.raises(ValueError, match="empty entity list"):
        EntityMatcher({" ": "x"})
    with pytest.raises(ValueError, match="mapping"):
        EntityMatcher([("Obama", "politician")])  # type: ignore[arg-type]


def test_mentions_on_crossner_sentences(politics30, entities):
    m = EntityMatcher(entities)
    # "Zappa" is labeled person then politician (a tie): the first type seen is kept.
    assert entities["Zappa"] == "person"
    s5 = m.find(_text(politics30[5]))
    # The inner "Zappa" of the album title is covered by the longer, earlier match.
    assert [x.surface for x in s5][:5] == [
        "Zappa", "PMRC", "Porn Wars", "Frank Zappa Meets the Mothers of Prevention", "Congress Shall Make No Law",
    ]
    s10 = [x.surface for x in m.find(_text(politics30[10]))]
    assert "Democratic Party" in s10 and "Democrat" not in s10
    s17 = [x.surface for x in m.find(_text(politics30[17]))]
    assert s17[:3] == ["George W. Bush", "2000 United States presidential election", "Bush"]
    s18 = [x.surface for x in m.find(_text(politics30[18]))]
    assert s18[4:7] == ["Texas", "Republican Party", "Texas Republicans"]
    text13 = _text(politics30[13])
    for found in m.find(text13):
        assert text13[found.start:found.end] == found.surface
    # "an ally" only matches the party "AN" when case is ignored.
    assert len(EntityMatcher(entities, case_sensitive=False).find(text13)) == len(m.find(text13)) + 1


# ----------------------------------------------------------------------------- entity lists


def test_entity_list_tsv_round_trip_and_errors(tmp_path, entities):
    path = save_entity_list(entities, tmp_path / "ents.tsv")
    assert load_entity_list(path) == entities
    bad = tmp_path / "bad.tsv"
    bad.write_text("# comment\nObama\tpolitician\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:3"):
        load_entity_list(bad)
    dup = tmp_path / "dup.tsv"
    dup.write_text("Obama\tpolitician\n\nObama\tperson\n", encoding="utf-8")
    assert load_entity_list(dup) == {"Obama": "politician"}


def test_entity_list_from_conll_with_ids_and_majority_type():
    names = LABELS["politics"]
    ids = {t: i for i, t in enumerate(names)}
    sents = [
        {"tokens": ["Russia", "won"], "ner_tags": [ids["B-country"], ids["O"]]},
        {"tokens": ["Russia", "won"], "ner_tags": [ids["B-organisation"], ids["O"]]},
        {"tokens": ["Russia", "lost"], "ner_tags": [ids["B-organisation"], ids["O"]]},
    ]
    assert entity_list_from_conll(sents, label_names=names) == {"Russia": "organisation"}
    with pytest.raises(ValueError, match="label_names"):
        entity_list_from_conll(sents)


def test_specialised_types():
    assert specialised_types("politics") == ["politician", "election", "politicalparty"]
    assert set(specialised_types("music")) == {
        "musicgenre", "song", "band", "album", "musicalartist", "musicalinstrument"
    }
    assert len(specialised_types("music")) == 6
    with pytest.raises(ValueError, match="specialised_types"):
        specialised_types("conll2003")


# ----------------------------------------------------------------------------- levels


def test_levels_on_mixed_corpus(mixed_corpus, entities):
    levels = build_corpus_levels(mixed_corpus, entities, "politics", k=2, seed=7)
    assert list(levels) == ["domain", "entity", "task", "integrated"]
    assert levels["domain"]["idx"][:] == list(range(41))
    assert levels["domain"]["text"][:] == mixed_corpus
    assert levels["entity"]["idx"][:] == EXPECTED_ENTITY
    assert levels["task"]["idx"][:] == EXPECTED_TASK
    row31 = levels["entity"][EXPECTED_ENTITY.index(31)]
    assert row31["n_mentions"] == 2 and row31["types"] == ["misc"]
    assert [m["surface"] for m in row31["mentions"]] == ["Democrat", "Democracy"]
    integrated = levels["integrated"]
    assert Counter(integrated["idx"]) == Counter(EXPECTED_TASK * 2 + EXPECTED_ENTITY)
    assert Counter(integrated["text"]) == Counter(
        [mixed_corpus[i] for i in EXPECTED_TASK * 2 + EXPECTED_ENTITY]
    )
    # Shuffled: not the concatenation order; reproducible with the seed, different with another.
    assert integrated["idx"][:] != EXPECTED_TASK * 2 + EXPECTED_ENTITY
    again = build_corpus_levels(mixed_corpus, entities, "politics", k=2, seed=7)
    assert again["integrated"]["idx"][:] == integrated["idx"][:]
    other = build_corpus_levels(mixed_corpus, entities, "politics", k=2, seed=8)
    assert other["integrated"]["idx"][:] != integrated["idx"][:]


def test_levels_k_and_specialised_types(politics30, entities):
    texts = [_text(s) for s in politics30]
    levels = build_corpus_levels(texts, EntityMatcher(entities), "politics", k=5, specialised_types=["election"])
    assert levels["entity"]["idx"][:] == EXPECTED_K5
    assert levels["task"]["idx"][:] == EXPECTED_ELECTION
    assert Counter(levels["integrated"]["idx"]) == Counter(EXPECTED_ELECTION * 2 + EXPECTED_K5)
    with pytest.raises(ValueError, match="k=0"):
        build_corpus_levels(texts, entities, "politics", k=0)
    with pytest.raises(ValueError, match="one string"):
        build_corpus_levels(texts[0], entities, "politics")


def test_levels_from_text_file_dataset_with_num_proc(tmp_path, mixed_corpus, entities):
    path = tmp_path / "corpus.txt"
    path.write_text("\n\n".join(mixed_corpus) + "\n   \n", encoding="utf-8")
    corpus = load_text_corpus(path, cache_dir=str(tmp_path / "cache"))
    assert corpus["text"][:] == mixed_corpus  # blank and whitespace-only lines dropped
    levels = build_corpus_levels(corpus, entities, "politics", num_proc=2, batch_size=8)
    assert levels["entity"]["idx"][:] == EXPECTED_ENTITY
    assert levels["task"]["idx"][:] == EXPECTED_TASK
    with pytest.raises(ValueError, match="not found"):
        load_text_corpus(tmp_path / "missing.txt")


# ----------------------------------------------------------------------------- model tagging


@pytest.fixture(scope="module")
def politics_tagger_dir(tiny_bert_dir, tmp_path_factory) -> str:
    """The tiny BERT with a random politics token-classification head."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    labels = LABELS["politics"]
    model = AutoModelForTokenClassification.from_pretrained(
        tiny_bert_dir, id2label=dict(enumerate(labels)), label2id={t: i for i, t in enumerate(labels)}
    )
    out = tmp_path_factory.mktemp("tagger")
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_bert_dir).save_pretrained(out)
    return str(out)


def test_find_mentions_with_model_random_head(politics30, politics_tagger_dir):
    texts = [_text(s) for s in politics30[:4]] + [""]
    found = find_mentions_with_model(texts, politics_tagger_dir, batch_size=2)
    assert len(found) == len(texts) and found[-1] == []
    allowed = set(entity_types("politics"))
    assert sum(map(len, found)) > 0
    for text, mentions in zip(texts, found, strict=True):
        for m in mentions:
            assert m.type in allowed
            assert text[m.start:m.end] == m.surface and m.surface == m.surface.strip()
        assert [m.start for m in mentions] == sorted(m.start for m in mentions)


def test_model_mentions_drive_levels(politics30, politics_tagger_dir):
    """A head forced to say I-politician everywhere: one whole-text politician per text."""
    import torch
    from transformers import AutoModelForTokenClassification, AutoTokenizer, pipeline

    model = AutoModelForTokenClassification.from_pretrained(politics_tagger_dir)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.fill_(0.0)
        model.classifier.bias[model.config.label2id["I-politician"]] = 10.0
    pipe = pipeline("token-classification", model=model, tokenizer=AutoTokenizer.from_pretrained(politics_tagger_dir),
                    aggregation_strategy="simple", device=-1)
    finder = ModelMentionFinder(pipe, batch_size=4)
    # Weights changed in memory must not share a cache key with the saved folder.
    assert finder.fingerprint != ModelMentionFinder(politics_tagger_dir).fingerprint
    texts = [_text(s) for s in politics30[:6]]
    assert finder(texts[:2]) == [[EntityMention(0, len(t), t, "politician")] for t in texts[:2]]
    levels = build_corpus_levels(texts, finder, "politics", k=2)
    assert len(levels["entity"]) == 0
    assert levels["task"]["idx"][:] == list(range(6))
    assert Counter(levels["integrated"]["idx"]) == Counter(list(range(6)) * 2)
    with pytest.raises(ValueError, match="not a local model folder"):
        ModelMentionFinder(str(Path(politics_tagger_dir) / "nope"))


# ----------------------------------------------------------------------------- tokenising


@pytest.fixture(scope="module")
def tokenizer(tiny_bert_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


def test_pack_sequences_small_cases():
    out = pack_sequences([[7, 8, 9], [5]], block_size=6, cls_id=1, sep_id=2, pad_id=0, word_ids=[[0, 0, 1], [0]])
    assert out["input_ids"] == [[1, 7, 8, 9, 2, 2], [1, 5, 2, 0, 0, 0]]
    assert out["attention_mask"] == [[1] * 6, [1, 1, 1, 0, 0, 0]]
    assert out["special_tokens_mask"] == [[1, 0, 0, 0, 1, 1], [1, 0, 1, 1, 1, 1]]
    assert out["word_ids"] == [[-1, 0, 0, 1, -1, -1], [-1, 0, -1, -1, -1, -1]]
    # A text exactly filling a block: the next block starts with text, not a separator.
    out = pack_sequences([[7, 8], [5, 6], []], block_size=4, cls_id=1, sep_id=2, pad_id=0)
    assert out["input_ids"] == [[1, 7, 8, 2], [1, 5, 6, 2]]
    with pytest.raises(ValueError, match="block_size=2"):
        pack_sequences([[1]], block_size=2, cls_id=1, sep_id=2, pad_id=0)


@pytest.mark.parametrize("block_size,pack_batch_size", [(32, 10_000), (64, 7)])
def test_packed_blocks(mixed_corpus, tokenizer, block_size, pack_batch_size):
    ds = Dataset.from_dict({"text": mixed_corpus})
    blocks = tokenize_corpus(ds, tokenizer, block_size=block_size, pack_batch_size=pack_batch_size)
    assert blocks.column_names == ["input_ids", "attention_mask", "special_tokens_mask", "word_ids"]
    cls, sep, pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    encoded = tokenizer(mixed_corpus, add_special_tokens=False)
    expected_ids = [i for ids in encoded["input_ids"] for i in ids]
    words = [(t, w) for t in range(len(mixed_corpus)) for w in encoded.word_ids(t)]
    content: list[int] = []
    n_padded = 0
    for row in blocks:
        ids, special, attn, wids = row["input_ids"], row["special_tokens_mask"], row["attention_mask"], row["word_ids"]
        assert len(ids) == len(special) == len(attn) == len(wids) == block_size
        assert ids[0] == cls and special[0] == 1
        last = sum(attn) - 1
        assert ids[last] == sep and attn == [1] * (last + 1) + [0] * (block_size - last - 1)
        assert ids[last + 1:] == [pad] * (block_size - last - 1)
        n_padded += last < block_size - 1
        assert special == [int(i in (cls, sep, pad)) for i in ids]
        assert ids[1] != sep  # a separator never opens a block
        assert [w for w, s in zip(wids, special, strict=True) if s] == [-1] * sum(special)
        # Whole-word ids: 0-based per block, +1 exactly when the (text, word) changes.
        inner = [k for k in range(block_size) if not special[k]]
        keys = [words[len(content) + j] for j in range(len(inner))]
        assert wids[inner[0]] == 0
        for j in range(1, len(inner)):
            assert wids[inner[j]] - wids[inner[j - 1]] == int(keys[j] != keys[j - 1])
        content.extend(ids[k] for k in inner)
    assert content == expected_ids  # no text lost or reordered
    assert n_padded <= -(-len(mixed_corpus) // pack_batch_size)  # one padded block per packing batch
    if pack_batch_size == 7:
        assert n_padded > 1


def test_line_mode_and_truncation(mixed_corpus, tokenizer):
    ds = Dataset.from_dict({"text": mixed_corpus + ["\u200b"]})
    lines = tokenize_corpus(ds, tokenizer, mode="line", block_size=40)
    assert len(lines) == len(mixed_corpus)  # the text with no token is dropped
    for text, row in zip(mixed_corpus, lines, strict=True):
        enc = tokenizer(text, truncation=True, max_length=40, return_special_tokens_mask=True)
        assert row["input_ids"] == enc["input_ids"] and len(row["input_ids"]) <= 40
        assert row["input_ids"][0] == tokenizer.cls_token_id and row["input_ids"][-1] == tokenizer.sep_token_id
        assert row["special_tokens_mask"] == enc["special_tokens_mask"]
        assert row["word_ids"] == [-1 if w is None else w for w in enc.word_ids()]
    assert max(len(r) for r in lines["input_ids"]) == 40  # long sentences were truncated


def test_tokenize_corpus_is_cached_and_validates(tmp_path, mixed_corpus, tokenizer):
    path = tmp_path / "c.txt"
    path.write_text("\n".join(mixed_corpus), encoding="utf-8")
    corpus = load_text_corpus(path, cache_dir=str(tmp_path / "cache"))
    first = tokenize_corpus(corpus, tokenizer, block_size=64, num_proc=2)
    second = tokenize_corpus(load_text_corpus(path, cache_dir=str(tmp_path / "cache")), tokenizer, block_size=64)
    assert first.cache_files and first.cache_files == second.cache_files
    assert first["input_ids"][:] == second["input_ids"][:]
    with pytest.raises(ValueError, match="model_max_length"):
        tokenize_corpus(corpus, tokenizer, block_size=4096)
    with pytest.raises(ValueError, match="mode="):
        tokenize_corpus(corpus, tokenizer, mode="blocks")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no 'content'"):
        tokenize_corpus(corpus, tokenizer, text_column="content")


# ----------------------------------------------------------------------------- publishing


def test_build_script_round_trip_offline(tmp_path, mixed_corpus, entities):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(mixed_corpus) + "\n\n", encoding="utf-8")
    ents = save_entity_list(entities, tmp_path / "ents.tsv")
    out = tmp_path / "out"
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run(
        [sys.executable, str(ROOT / "dataset_scripts" / "crossner_corpora.py"), "--domain", "politics",
         "--text_file", str(corpus), "--entity_list", str(ents), "--output_dir", str(out), "--seed", "3"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    for level in ("domain", "entity", "task", "integrated"):
        assert (out / "data" / f"politics-{level}" / "train-00000-of-00001.parquet").is_file()
    integrated = load_dataset(str(out), "politics-integrated", split="train", cache_dir=str(tmp_path / "c"))
    assert Counter(integrated["idx"]) == Counter(EXPECTED_TASK * 2 + EXPECTED_ENTITY)
    entity = load_dataset(str(out), "politics-entity", split="train", cache_dir=str(tmp_path / "c"))
    assert entity["idx"][:] == EXPECTED_ENTITY
    assert entity.features == MENTION_FEATURES
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "config_name: politics-integrated" in card and "dataset_info:" in card
    assert f"| `politics-entity` | {len(EXPECTED_ENTITY)} |" in card
    meta = DatasetCard.load(out / "README.md").data["crossner_corpora"]
    assert meta["specialised_types"] == ["politician", "election", "politicalparty"]
    assert (meta["k"], meta["seed"], meta["case_sensitive"]) == (2, 3, True)
    assert meta["counts"] == {"domain": 41, "entity": 36, "task": 33, "integrated": 102}
    assert "k=2" in card and "seed 3" in card
    assert load_entity_list(out / "entity_list.tsv") == entities


def test_build_script_from_crossner_yaml(tmp_path, crossner_data_dir, mixed_corpus):
    from crossner_hf.commands import build_corpora as script

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(mixed_corpus), encoding="utf-8")
    config = tmp_path / "build.yaml"
    config.write_text(
        f"domain: politics\ntext_file: [{corpus}]\nentity_list_from_crossner: {crossner_data_dir}\n"
        f"output_dir: {tmp_path / 'out'}\nk: 3\nspecialised_types: [election]\n",
        encoding="utf-8",
    )
    (args,) = script.make_parser().parse_args_and_config(["--config", str(config), "--k", "4"])
    assert args.k == 4 and args.text_file == [str(corpus)] and args.specialised_types == ["election"]
    from crossner_hf.corpora.build import build_corpora

    folder = build_corpora(args)
    # The script must select exactly what the library selects with the same settings.
    expected = build_corpus_levels(
        mixed_corpus, entity_list_from_conll(_sentences(crossner_data_dir, "politics", "train")),
        "politics", k=4, specialised_types=["election"],
    )
    for level in ("entity", "task"):
        built = load_dataset(str(folder), f"politics-{level}", split="train", cache_dir=str(tmp_path / "c"))
        assert built["idx"][:] == expected[level]["idx"][:]
    assert expected["task"]["idx"][:] and all("election" in t for t in expected["task"]["types"])
    args.ner_model = "x"
    with pytest.raises(ValueError, match="exactly one of"):
        script.main(args)


def test_write_folder_shards_and_push(tmp_path):
    ds = Dataset.from_dict({"text": [f"line {i}" for i in range(100)]})
    folder = write_hub_dataset_folder(
        {"a-b": ds.filter(lambda e: e["text"].endswith("7"))}, tmp_path / "f", {"license": "mit"}, "# T\n",
        max_shard_bytes=50,
    )
    shards = sorted(p.name for p in (folder / "data" / "a-b").iterdir())
    assert len(shards) > 1 and shards[0] == f"train-00000-of-{len(shards):05d}.parquet"
    loaded = load_dataset(str(folder), "a-b", split="train", cache_dir=str(tmp_path / "c"))
    assert loaded["text"][:] == [f"line {i}" for i in range(100) if i % 10 == 7]
    with pytest.raises(ValueError, match="Config name"):
        write_hub_dataset_folder({"a b": ds}, tmp_path / "g", {}, "")


def test_release_packing_runs_texts_on_and_drops_the_partial_block():
    """--packing release: the CrossNER release's TextDataset (one stream, no separator, tail dropped)."""
    from crossner_hf.corpora.text import pack_sequences

    texts = [[7, 8, 9], [5, 6], [4, 3, 11, 12]]
    ours = pack_sequences(texts, block_size=5, cls_id=1, sep_id=2, pad_id=0)["input_ids"]
    release = pack_sequences(texts, block_size=5, cls_id=1, sep_id=2, pad_id=0, release=True)["input_ids"]
    assert release == [[1, 7, 8, 9, 2], [1, 5, 6, 4, 2], [1, 3, 11, 12, 2]]
    assert ours == [[1, 7, 8, 9, 2], [1, 5, 6, 2, 2], [1, 4, 3, 11, 2], [1, 12, 2, 0, 0]]
    stream = [t for text in texts for t in text]
    assert [t for block in release for t in block[1:-1]] == stream[: len(stream) // 3 * 3]


def test_a_text_file_without_text_is_one_line_naming_it(tmp_path):
    """An empty raw-text file (a search's `--raw_text` of blank lines) is refused where it is read, naming it; it used
    to reach the corpus levels and fail there asking for `annotate_mentions`."""
    from crossner_hf.corpora.text import load_text_corpus

    empty = tmp_path / "raw.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"raw\.txt hold\(s\) no text \(2 blank line\(s\)\)"):
        load_text_corpus(str(empty), cache_dir=str(tmp_path / "cache"))
