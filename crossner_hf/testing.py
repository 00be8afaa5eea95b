"""Tiny offline models for tests, examples and smoke runs.

Nothing here downloads: the vocabulary is built from the words given, the weights are
random. ``make_tiny_bert`` writes a folder that ``AutoTokenizer``, ``AutoModelForMaskedLM``
and ``AutoModelForTokenClassification`` all load with ``from_pretrained``.

Example:
    >>> import tempfile
    >>> from transformers import AutoModelForMaskedLM, AutoTokenizer
    >>> path = make_tiny_bert(tempfile.mkdtemp(), words=["the", "senate", "voted"])
    >>> AutoTokenizer.from_pretrained(path).tokenize("The senate voted")
    ['the', 'senate', 'voted']
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def make_tiny_bert(
    path: str | Path,
    words: Iterable[str] = (),
    *,
    hidden_size: int = 32,
    num_layers: int = 2,
    max_position_embeddings: int = 512,
    lowercase: bool = True,
    seed: int = 0,
) -> str:
    """Write a random tiny BERT (masked-LM head) and its WordPiece tokenizer to ``path``.

    The vocabulary holds the special tokens, single characters (so every word can be
    split into pieces), ``##`` continuations of them, and ``words`` (lower-cased if
    ``lowercase``). Returns the folder as a string.
    """
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    chars = [chr(c) for c in range(33, 127)]
    vocab: list[str] = list(SPECIAL_TOKENS) + chars + [f"##{c}" for c in chars]
    seen = set(vocab)
    for word in words:
        w = word.lower() if lowercase else word
        if w and w not in seen:
            seen.add(w)
            vocab.append(w)
    vocab_file = path / "vocab.txt"
    vocab_file.write_text("\n".join(vocab) + "\n", encoding="utf-8")

    tokenizer = BertTokenizer(vocab=str(vocab_file), do_lower_case=lowercase)
    tokenizer.model_max_length = max_position_embeddings
    tokenizer.save_pretrained(path)

    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=2,
        intermediate_size=hidden_size * 2,
        max_position_embeddings=max_position_embeddings,
    )
    BertForMaskedLM(config).save_pretrained(path)
    return str(path)


def make_multistream_dump(source: str | Path, dump: str | Path, index: str | Path, pages_per_stream: int = 100) -> int:
    """Rewrite a dump as a MediaWiki *multistream* bz2 file plus its index; returns the stream count.

    As the real ``pages-articles-multistream`` files: a first stream with the header
    (``<mediawiki>`` and ``<siteinfo>``), then bz2 streams of ``pages_per_stream`` pages,
    then a last stream with ``</mediawiki>``; the index has one ``offset:page_id:title``
    line per page, ``offset`` being the byte where its stream starts.
    """
    import bz2
    import re

    from crossner_hf.wikipedia.dump import open_dump

    text = open_dump(source).read().decode("utf-8")
    first = text.index("  <page>")
    end = text.rindex("</mediawiki>")
    pages = re.findall(r"  <page>.*?</page>\n", text[first:end], flags=re.DOTALL)
    streams = [text[:first]] + ["".join(pages[i:i + pages_per_stream]) for i in range(0, len(pages), pages_per_stream)]
    streams.append(text[end:])
    lines, offset = [], 0
    with open(dump, "wb") as out:
        for number, stream in enumerate(streams):
            if 0 < number < len(streams) - 1:
                for page in re.finditer(r"<title>(.*?)</title>.*?<id>(\d+)</id>", stream, flags=re.DOTALL):
                    lines.append(f"{offset}:{page.group(2)}:{page.group(1)}\n")
            data = bz2.compress(stream.encode("utf-8"))
            out.write(data)
            offset += len(data)
    Path(index).write_text("".join(lines), encoding="utf-8")
    return len(streams)


def make_renamed_conll_folder(source: str | Path, folder: str | Path, rename: dict[str, str]) -> Path:
    """A CoNLL folder (train/dev/test.txt) copied from a CrossNER config folder (e.g. ``.../politics``) with
    entity types renamed: a dataset the library has no label list for, as a user's own data would be."""
    from crossner_hf.data.conll import read_conll, write_conll

    source, folder = Path(source), Path(folder)
    folder.mkdir(parents=True)
    for name in ("train.txt", "dev.txt", "test.txt"):
        sentences = read_conll(source / name, None)
        for s in sentences:
            s["ner_tags"] = [t if t == "O" else f"{t[:2]}{rename.get(t[2:], t[2:])}" for t in s["ner_tags"]]
        write_conll(folder / name, sentences)
    return folder
