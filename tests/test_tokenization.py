"""Sub-word alignment, windows for long sentences, empty-token words and word-level prediction."""

from __future__ import annotations

import random

import pytest

from crossner_hf.data.labels import LABELS
from crossner_hf.inference.predict import label_names, predict_tags
from crossner_hf.data.tokenization import (
    IGNORE_INDEX,
    SPECIAL_WORD_ID,
    stitch_word_predictions,
    tokenize_and_align,
    tokenize_dataset,
)

NAMES = LABELS["politics"]
TAG = {name: i for i, name in enumerate(NAMES)}
CORPUS = [
    "The senate voted on the election bill in Washington",
    "Barack Obama met Angela Merkel of the Christian Democratic Union in Berlin",
    "Unigram tokenizers split words into sentencepiece pieces",
    "Parliament dissolved and the prime minister called a snap election",
]
# Words with no sub-word in at least one tokenizer: zero-width space, NUL, BOM, soft hyphen, "".
EMPTY_WORDS = ["\u200b", "\x00", "\ufeff", "\u00ad", ""]


@pytest.fixture(scope="session")
def bert_tokenizer(tiny_bert_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_bert_dir)


@pytest.fixture(scope="session")
def bpe_tokenizer(tmp_path_factory):
    """A byte-level BPE (RoBERTa-style) tokenizer trained offline on CORPUS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import RobertaTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.post_processor = processors.RobertaProcessing(
        ("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>"))
    )
    path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
    tok.save(str(path))
    return RobertaTokenizerFast(tokenizer_file=str(path), add_prefix_space=True, model_max_length=64)


@pytest.fixture(scope="session")
def unigram_tokenizer():
    """A SentencePiece-style (Unigram + Metaspace) tokenizer trained offline on CORPUS."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=120, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>"
    )
    tok.train_from_iterator(CORPUS * 3, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="</s>", unk_token="<unk>", pad_token="<pad>", model_max_length=64
    )


@pytest.fixture(params=["bert", "bpe", "unigram"])
def any_tokenizer(request):
    return request.getfixturevalue(f"{request.param}_tokenizer")


@pytest.fixture(scope="session")
def tiny_ner_model(tiny_bert_dir):
    import torch
    from transformers import AutoModelForTokenClassification

    torch.manual_seed(0)
    return AutoModelForTokenClassification.from_pretrained(tiny_bert_dir, num_labels=len(NAMES))


def _random_tags(words: list[str], seed: int = 0) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(len(NAMES)) for _ in words]


def _labelled(rows: dict, example: int = 0) -> dict[int, list[tuple[int, int]]]:
    """word -> [(row, position)] of every labelled position of one example."""
    found: dict[int, list[tuple[int, int]]] = {}
    for row, (labels, wids) in enumerate(zip(rows["labels"], rows["word_ids"])):
        if rows["example_index"][row] != example:
            continue
        for pos, (label, w) in enumerate(zip(labels, wids)):
            if label != IGNORE_INDEX:
                found.setdefault(w, []).append((row, pos))
    return found


def test_wordpiece_labels_first_subword_only(bert_tokenizer):
    words = ["Obama", "xqzv", "senate"]
    out = tokenize_and_align(
        {"tokens": [words], "ner_tags": [[TAG["B-politician"], TAG["B-misc"], TAG["O"]]]}, bert_tokenizer
    )
    tokens = bert_tokenizer.convert_ids_to_tokens(out["input_ids"][0])
    assert tokens == ["[CLS]", "obama", "x", "##q", "##z", "##v", "senate", "[SEP]"]
    assert out["word_ids"][0] == [SPECIAL_WORD_ID, 0, 1, 1, 1, 1, 2, SPECIAL_WORD_ID]
    assert out["labels"][0] == [
        IGNORE_INDEX,
        TAG["B-politician"],
        TAG["B-misc"],
        -100,
        -100,
        -100,
        TAG["O"],
        -100,
    ]
    assert out["token_type_ids"][0] == [0] * 8 and out["attention_mask"][0] == [1] * 8
    assert out["example_index"] == [0] and out["window_index"] == [0]


def test_label_all_subwords_turns_begin_into_inside(bert_tokenizer):
    words = ["xqzv", "yy", "senate"]
    tags = [[TAG["B-misc"], TAG["I-misc"], TAG["O"]]]
    out = tokenize_and_align(
        {"tokens": [words], "ner_tags": tags}, bert_tokenizer, label_all_subwords=True, label_names=NAMES
    )
    b, i = TAG["B-misc"], TAG["I-misc"]
    assert out["labels"][0] == [-100, b, i, i, i, i, i, TAG["O"], -100]
    with pytest.raises(ValueError, match="needs label_names"):
        tokenize_and_align({"tokens": [words], "ner_tags": tags}, bert_tokenizer, label_all_subwords=True)
    with pytest.raises(ValueError, match="no 'I-x'"):
        tokenize_and_align(
            {"tokens": [words], "ner_tags": [[0, 0, 0]]},
            bert_tokenizer,
            label_all_subwords=True,
            label_names=["O", "B-x"],
        )


def test_tag_names_are_mapped_with_label_names(bert_tokenizer):
    out = tokenize_and_align(
        {"tokens": [["Obama", "x"]], "ner_tags": [["B-politician", "O"]]}, bert_tokenizer, label_names=NAMES
    )
    assert out["labels"][0] == [-100, TAG["B-politician"], TAG["O"], -100]
    with pytest.raises(ValueError, match="label_names"):
        tokenize_and_align({"tokens": [["Obama"]], "ner_tags": [["B-politician"]]}, bert_tokenizer)
    with pytest.raises(ValueError, match="Example 0: 2 tokens but 1 ner_tags"):
        tokenize_and_align({"tokens": [["Obama", "x"]], "ner_tags": [[0]]}, bert_tokenizer)


def test_alignment_holds_for_every_tokenizer_family(any_tokenizer):
    sentences = [s.split() for s in CORPUS] + [["Zyxwv", "Qqq", "senate", "über", "naïve"]]
    tags = [_random_tags(s, i) for i, s in enumerate(sentences)]
    out = tokenize_and_align({"tokens": sentences, "ner_tags": tags}, any_tokenizer)
    assert out["example_index"] == list(range(len(sentences)))
    for row, words in enumerate(sentences):
        wids = out["word_ids"][row]
        labelled = [
            (pos, w) for pos, (lab, w) in enumerate(zip(out["labels"][row], wids)) if lab != IGNORE_INDEX
        ]
        # Exactly one label per word, on its first sub-word, carrying its tag.
        assert [w for _, w in labelled] == list(range(len(words)))
        for pos, w in labelled:
            assert wids.index(w) == pos and out["labels"][row][pos] == tags[row][w]
        # The sub-words of each word spell the word (modulo lower-casing; unknown pieces aside).
        for w, word in enumerate(words):
            pieces = [t for t, i in zip(out["input_ids"][row], wids) if i == w]
            assert pieces
            if not word.isascii() or any_tokenizer.unk_token_id in pieces:
                continue
            text = any_tokenizer.decode(pieces).strip()
            assert text.lower() == word.lower(), (word, any_tokenizer.convert_ids_to_tokens(pieces))
        specials = [i for i, w in zip(out["input_ids"][row], wids) if w == SPECIAL_WORD_ID]
        assert all(i in any_tokenizer.all_special_ids for i in specials)


def test_words_without_subwords_still_get_a_position(any_tokenizer):
    words = ["Obama", *EMPTY_WORDS, "senate", "\u200b\u200b"]
    tags = _random_tags(words, 3)
    out = tokenize_and_align({"tokens": [words], "ner_tags": [tags]}, any_tokenizer)
    labelled = _labelled(out)
    assert sorted(labelled) == list(range(len(words)))
    for w, [(row, pos)] in labelled.items():
        assert out["labels"][row][pos] == tags[w]
    # Words that were empty hold the unknown token.
    direct = any_tokenizer([words], is_split_into_words=True, add_special_tokens=False)
    empty = set(range(len(words))) - set(direct.word_ids(0))
    assert "" in words and words.index("") in empty
    for w in empty:
        [(row, pos)] = labelled[w]
        assert out["input_ids"][row][pos] == any_tokenizer.unk_token_id
    assert words[1] == "\u200b"  # the caller's list is left untouched


def test_long_sentence_is_windowed_and_every_word_labelled_once(bert_tokenizer):
    rng = random.Random(1)
    vocab = ["the", "senate", "Zyxwvut", "election", "Qqqqq", "minister", "of"]
    words = [rng.choice(vocab) for _ in range(2000)]
    tags = _random_tags(words, 4)
    stride = 40
    out = tokenize_and_align(
        {"tokens": [words, ["short"]], "ner_tags": [tags, [0]]}, bert_tokenizer, stride=stride
    )
    rows = [r for r, ex in enumerate(out["example_index"]) if ex == 0]
    assert len(rows) > 1 and out["example_index"][rows[-1] + 1 :] == [1]
    assert [out["window_index"][r] for r in rows] == list(range(len(rows)))
    assert max(len(out["input_ids"][r]) for r in rows) <= 512
    for r in rows:
        assert (
            out["input_ids"][r][0] == bert_tokenizer.cls_token_id
            and out["input_ids"][r][-1] == bert_tokenizer.sep_token_id
        )
    labelled = _labelled(out)
    assert all(len(v) == 1 for v in labelled.values()) and sorted(labelled) == list(range(2000))
    for w in range(2000):
        [(row, pos)] = labelled[w]
        assert out["labels"][row][pos] == tags[w]
    # Windows hold whole words, cover the sentence, and overlap by at most `stride` tokens.
    full = bert_tokenizer(
        [words], is_split_into_words=True, add_special_tokens=False, verbose=False
    ).word_ids(0)
    n_pieces = [full.count(w) for w in range(2000)]
    for r in rows:
        inside = [w for w in out["word_ids"][r] if w >= 0]
        assert all(inside.count(w) == n_pieces[w] for w in set(inside))
    assert out["word_ids"][rows[0]][1] == 0 and out["word_ids"][rows[-1]][-2] == 1999
    for a, b in zip(rows, rows[1:], strict=False):
        first_a, first_b = out["word_ids"][a][1], out["word_ids"][b][1]
        last_a = out["word_ids"][a][-2]
        assert first_a < first_b <= last_a + 1
        overlap = sum(1 for w in out["word_ids"][b][1:-1] if w <= last_a)
        assert 0 < overlap <= stride


def test_stride_and_length_are_validated(bert_tokenizer):
    with pytest.raises(ValueError, match=r"stride=32 must be in \[0, 14\)"):
        tokenize_and_align({"tokens": [["a"]]}, bert_tokenizer, max_length=16)
    with pytest.raises(ValueError, match="no room"):
        tokenize_and_align({"tokens": [["a"]]}, bert_tokenizer, max_length=2, stride=0)


def test_sentence_at_the_limit_is_one_window_and_one_more_word_makes_two(bert_tokenizer):
    words = ["senate"] * 14  # one token each; 14 + [CLS] + [SEP] = 16
    one = tokenize_and_align({"tokens": [words]}, bert_tokenizer, max_length=16, stride=4)
    two = tokenize_and_align({"tokens": [words + ["senate"]]}, bert_tokenizer, max_length=16, stride=4)
    assert len(one["input_ids"]) == 1 and len(two["input_ids"]) == 2
    assert "labels" not in one
    # The second window starts at the first word within stride=4 tokens of the first one's end.
    assert two["word_ids"][1][1:-1] == list(range(10, 15))


def test_stitch_picks_the_window_where_a_word_is_most_central():
    word_ids = [
        [None, 0, 1, 2, 3, None],
        [-1, 2, 3, 4, 5, -1],
    ]
    preds = [["a0", "a1", "a2", "a3", "a4", "a5"], ["b0", "b1", "b2", "b3", "b4", "b5"]]
    # Word 2: 1 token from window 0's right edge, 0 from window 1's left edge -> window 0.
    # Word 3: 0 from window 0's edge, 1 from window 1's -> window 1.
    assert stitch_word_predictions(preds, word_ids, [0, 0], [6]) == [["a1", "a2", "a3", "b2", "b3", "b4"]]
    # Row order does not matter (the trainer sorts rows by length).
    assert stitch_word_predictions(preds[::-1], word_ids[::-1], [0, 0], [6]) == [
        ["a1", "a2", "a3", "b2", "b3", "b4"]
    ]
    # Word 2 is 1 token from the nearer edge in both windows: the tie goes to the earlier one.
    tie = [[None, 0, 1, 2, 3, None], [None, 1, 2, 3, 4, None]]
    assert stitch_word_predictions([list("abcdef"), list("ghijkl")], tie, [0, 0], [5]) == [
        ["b", "c", "d", "j", "k"]
    ]
    assert stitch_word_predictions([list("ghijkl"), list("abcdef")], tie[::-1], [0, 0], [5]) == [
        ["b", "c", "d", "j", "k"]
    ]
    # The sentence's own start is no window edge: words 0 and 1 lie at the start of both
    # windows, so only the distance to the right edge counts, and it is larger in the second.
    nested = [[None, 0, 1, 2, 3, None], [None, 0, 1, 2, 3, 4, 5, 6, None]]
    assert stitch_word_predictions([list("abcdef"), list("ABCDEFGHI")], nested, [0, 0], [7])[0][:2] == [
        "B",
        "C",
    ]


def test_stitch_handles_several_examples_and_reports_gaps():
    import numpy as np

    word_ids = [[-1, 0, 0, 1, -1], [-1, 0, -1]]
    logits = [np.arange(10).reshape(5, 2), np.arange(6).reshape(3, 2)]
    out = stitch_word_predictions(logits, word_ids, [1, 0], [1, 2, 0])
    assert [len(x) for x in out] == [1, 2, 0]
    assert out[0][0].tolist() == [2, 3] and out[1][1].tolist() == [6, 7]
    with pytest.raises(ValueError, match=r"Example 0: Words \[1\]"):
        stitch_word_predictions([[0, 0, 0]], [[-1, 0, -1]], [0], [2])
    with pytest.raises(ValueError, match="outputs must cover"):
        stitch_word_predictions([[0, 0]], [[-1, 0, -1]], [0], [1])


def test_tokenize_dataset_gives_global_example_indices(bert_tokenizer):
    from datasets import ClassLabel, Dataset, Features, List, Value

    features = Features(
        {"id": Value("string"), "tokens": List(Value("string")), "ner_tags": List(ClassLabel(names=NAMES))}
    )
    sentences = [s.split() for s in CORPUS] * 3
    ds = Dataset.from_dict(
        {
            "id": [str(i) for i in range(len(sentences))],
            "tokens": sentences,
            "ner_tags": [[0] * len(s) for s in sentences],
        },
        features=features,
    )
    out = tokenize_dataset(ds, bert_tokenizer, max_length=12, stride=3)
    assert "tokens" not in out.column_names and {"labels", "word_ids", "example_index"} <= set(
        out.column_names
    )
    assert sorted(set(out["example_index"])) == list(range(len(sentences)))
    assert len(out) > len(ds)  # the 12-token limit forces extra windows
    per_example = [0] * len(sentences)
    for row in out.to_list():
        per_example[row["example_index"]] += sum(1 for lab in row["labels"] if lab != IGNORE_INDEX)
    assert per_example == [len(s) for s in sentences]


def test_windows_collate_and_train(bert_tokenizer, tiny_ner_model):
    from transformers import DataCollatorForTokenClassification

    sentences = [s.split() for s in CORPUS]
    out = tokenize_and_align(
        {"tokens": sentences, "ner_tags": [_random_tags(s, i) for i, s in enumerate(sentences)]},
        bert_tokenizer,
        max_length=10,
        stride=2,
    )
    keep = ("input_ids", "attention_mask", "token_type_ids", "labels")
    rows = [{k: out[k][r] for k in keep} for r in range(len(out["input_ids"]))]
    batch = DataCollatorForTokenClassification(bert_tokenizer)(rows)
    loss = tiny_ner_model(**batch).loss
    assert loss.item() > 0


def _first_subword_argmax(model, tokenizer, words):
    """Reference: one forward pass, argmax at each word's first sub-word (short sentences only)."""
    import torch

    model.eval()
    enc = tokenizer([words], is_split_into_words=True, return_tensors="pt")
    with torch.no_grad():
        ids = model(**enc).logits.argmax(-1)[0].tolist()
    first = {}
    for pos, w in enumerate(enc.word_ids(0)):
        if w is not None:
            first.setdefault(w, pos)
    return [label_names(model)[ids[first[w]]] for w in range(len(words))]


def test_predict_tags_matches_a_plain_forward_pass(bert_tokenizer, tiny_ner_model):
    sentences = [s.split() for s in CORPUS]
    tags = predict_tags(tiny_ner_model, bert_tokenizer, sentences, batch_size=3)
    assert tags == [_first_subword_argmax(tiny_ner_model, bert_tokenizer, s) for s in sentences]
    assert len({t for sent in tags for t in sent}) > 1  # random head: the check is not trivially all-"O"


def test_predict_tags_gives_one_tag_per_word_for_long_and_odd_input(bert_tokenizer, tiny_ner_model):
    rng = random.Random(2)
    long = [rng.choice(["senate", "Zyxwv", "election", "of"]) for _ in range(2000)]
    odd = ["Obama", *EMPTY_WORDS, "senate"]
    sentences = [long, odd, [], ["senate"]]
    tiny_ner_model.train()
    tags = predict_tags(tiny_ner_model, bert_tokenizer, sentences, batch_size=4)
    assert tiny_ner_model.training  # the caller's mode is restored
    assert [len(t) for t in tags] == [len(s) for s in sentences]
    assert all(t in label_names(tiny_ner_model) for sent in tags for t in sent)
    # Batching and padding do not change the result.
    assert predict_tags(tiny_ner_model, bert_tokenizer, sentences, batch_size=1) == tags


def test_predict_tags_uses_the_owner_window_of_each_word(bert_tokenizer, tiny_ner_model):
    words = [f"w{i % 7}" for i in range(60)]
    tags = predict_tags(tiny_ner_model, bert_tokenizer, [words], max_length=24, stride=8)
    enc = tokenize_and_align({"tokens": [words]}, bert_tokenizer, max_length=24, stride=8)
    per_window = []
    for row in range(len(enc["input_ids"])):
        window_words = sorted({w for w in enc["word_ids"][row] if w >= 0})
        sub = [words[w] for w in window_words]
        per_window.append((window_words, _first_subword_argmax(tiny_ner_model, bert_tokenizer, sub)))
    assert len(per_window) > 2
    # Each word's tag is that of the window, run alone, where the word has the most tokens
    # between itself and the nearer window edge (sentence ends are no edge; ties: earlier).
    for w, tag in enumerate(tags[0]):
        best = None
        for row, (ws, pred) in enumerate(per_window):
            if w not in ws:
                continue
            content = [x for x in enc["word_ids"][row] if x >= 0]
            left = content.index(w) if ws[0] != 0 else float("inf")
            right = content[::-1].index(w) if ws[-1] != len(words) - 1 else float("inf")
            if best is None or min(left, right) > best[0]:
                best = (min(left, right), pred[ws.index(w)])
        assert tag == best[1], w
