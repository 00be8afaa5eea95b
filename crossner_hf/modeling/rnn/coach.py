"""Coach (Liu et al., ACL 2020) as CrossNER ran it: detect entities type-free, then type each detected span.

The CrossNER release's ``src/coach/`` (``main.py --coach``): the BiLSTM tagger of the
``crossner`` BiLSTM-CRF (GloVe 300d ++ character n-gram 100d words, dropout, 2 x 256 BiLSTM) with a
linear layer and a CRF over O / B / I only (stage 1, entity detection); each span (a ``B`` and the
``I`` after it) goes through a one-layer BiLSTM over the stage-1 hidden states, summed over the
span (stage 2), and its type is the argmax of the dot product with a fixed representation of each
entity type: a random N(0, 1) vector plus the sum of the word vectors of the words describing the
type ("political party" for ``politicalparty``; ``src/coach/utils.py`` ``load_entity_embedding``),
with the character n-gram part taken from the description's n-gram vectors.

Sizes (the release's, ``README.md`` and ``src/config.py``): 400-d words + characters, 256 units a
direction, the span encoder 200 a direction so that the span feature (400) meets the type vectors
(400); the word-only row uses 300-d words and 150 a direction.

Documented differences from the release (``docs/fidelity.md``):

- the release steps Adam after the CRF loss and again after each sentence's typing loss, reusing
  the graph (``retain_graph``) after the parameters changed, which current PyTorch refuses (the
  saved tensors were modified in place). Here one step takes the sum of the CRF loss (mean over
  sentences) and the typing cross-entropy (mean over the batch's gold spans): the same objectives,
  one update a batch;
- a span is a ``B`` with the ``I`` right after it (the release also swept in ``I`` tags separated
  from the ``B`` by an ``O``); an ``I`` after ``O`` starts a span, as conlleval reads it;
- padding is masked in the CRF (the release scored it as ``O``), as in the BiLSTM-CRF here.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFConfig, RNNTaggerPreTrainedModel
from crossner_hf.modeling.rnn.crf import CRF
from crossner_hf.modeling.rnn.layers import StackedBiLSTM, TaggerOutput, WordNgramEmbedding

BIO = ("O", "B", "I")

TYPE_DESCRIPTIONS = {
    "misc": "miscellaneous", "politicalparty": "political party", "chemicalelement": "chemical element",
    "chemicalcompound": "chemical compound", "astronomicalobject": "astronomical object",
    "academicjournal": "academic journal", "musicgenre": "music genre", "musicalartist": "musical artist",
    "musicalinstrument": "musical instrument", "literarygenre": "literary genre",
    "programlang": "programming language",
}
"""Words describing a type where its name is not one word (the release's ``entity2desp``); others: the name."""


def entity_types(labels: list[str]) -> list[str]:
    """The entity types of a BIO label list, in the order their ``B-`` tags appear."""
    return [t[2:] for t in labels if t.startswith("B-")]


def describe(entity_type: str) -> list[str]:
    return TYPE_DESCRIPTIONS.get(entity_type, entity_type).split()


def spans(bio: list[int]) -> list[tuple[int, int]]:
    """``(start, end)`` (end exclusive) of each span of a O/B/I id sequence: a B, or an I after O, opens one;
    the I right after it extend it."""
    found: list[tuple[int, int]] = []
    start = None
    for i, tag in enumerate([*bio, 0]):
        if start is not None and tag != 2:
            found.append((start, i))
            start = None
        if tag == 1 or (tag == 2 and start is None):
            start = i
    return found


class CoachConfig(BiLSTMCRFConfig):
    model_type = "crossner_coach"

    def __init__(self, entity_hidden_size: int = 200, entity_layers: int = 1, **kwargs):
        kwargs.setdefault("char_encoder", "ngram")
        super().__init__(**kwargs)
        self.entity_hidden_size, self.entity_layers = entity_hidden_size, entity_layers


class CoachForTokenClassification(RNNTaggerPreTrainedModel):
    """Coach: O/B/I detection with a CRF, then span typing against fixed type vectors.

    ``labels`` are ids of the full BIO label list (``config.id2label``); ``decode`` returns ids of
    that list, so evaluation and prediction are those of every RNN tagger here.
    """

    config_class = CoachConfig
    base_model_prefix = "coach"

    def __init__(self, config: CoachConfig):
        super().__init__(config)
        self.embed = WordNgramEmbedding(config)
        self.encoder = StackedBiLSTM(self.embed.output_dim, config.hidden_size, config.num_layers, config.dropout)
        self.bio = nn.Linear(2 * config.hidden_size, len(BIO))
        self.crf = CRF(len(BIO))
        self.span_encoder = nn.LSTM(2 * config.hidden_size, config.entity_hidden_size, num_layers=config.entity_layers,
                                    batch_first=True, bidirectional=True)
        labels = [config.id2label[i] for i in range(config.num_labels)]
        self.types = entity_types(labels)
        # the fixed type representations (set by the recipe from the word vectors; saved with the model)
        self.register_buffer("type_vectors", torch.zeros(len(self.types), 2 * config.entity_hidden_size))
        self.set_index_buffers()
        self.post_init()

    def set_index_buffers(self) -> None:
        labels = [self.config.id2label[i] for i in range(self.config.num_labels)]
        device = self.type_vectors.device
        self.label_id = {t: i for i, t in enumerate(labels)}  # decode's tag names -> ids, built once
        self.register_buffer("bio_of_label", torch.tensor([0 if t == "O" else 1 if t.startswith("B-") else 2
                                                           for t in labels], device=device), persistent=False)
        self.register_buffer("type_of_label", torch.tensor([self.types.index(t[2:]) if t != "O" else -1
                                                            for t in labels], device=device), persistent=False)

    def hidden(self, word_ids, attention_mask) -> torch.Tensor:
        return self.encoder(self.embed(word_ids), attention_mask.sum(1))

    def span_features(self, hidden: torch.Tensor, found: list[tuple[int, int, int]]) -> torch.Tensor:
        """The summed span-encoder outputs of each ``(sentence, start, end)``: (n_spans, 2 x entity_hidden_size)."""
        lengths = torch.tensor([end - start for _, start, end in found])
        padded = torch.zeros(len(found), int(lengths.max()), hidden.size(-1), device=hidden.device, dtype=hidden.dtype)
        for k, (b, start, end) in enumerate(found):
            padded[k, : end - start] = hidden[b, start:end]
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        out, _ = pad_packed_sequence(self.span_encoder(packed)[0], batch_first=True)
        return out.sum(dim=1)  # padded positions come back as zeros

    def type_logits(self, features: torch.Tensor) -> torch.Tensor:
        return features @ self.type_vectors.t()

    def forward(self, word_ids, char_ids=None, attention_mask=None, labels=None, **kwargs) -> TaggerOutput:
        hidden = self.hidden(word_ids, attention_mask)
        emissions = self.bio(hidden)
        if labels is None:
            return TaggerOutput(logits=emissions)
        gold = labels.clamp(min=0)
        bio = self.bio_of_label[gold] * attention_mask
        loss = -self.crf(emissions, bio, attention_mask.bool()).mean()
        lengths = attention_mask.sum(1).tolist()
        found = [(b, s, e) for b in range(word_ids.size(0)) for s, e in spans(bio[b, : lengths[b]].tolist())]
        if found:
            types = torch.stack([self.type_of_label[gold[b, s]] for b, s, _ in found])
            known = types >= 0
            if known.any():
                logits = self.type_logits(self.span_features(hidden, found))
                loss = loss + nn.functional.cross_entropy(logits[known], types[known])
        return TaggerOutput(loss=loss, logits=emissions)

    @torch.no_grad()
    def decode(self, word_ids, char_ids=None, attention_mask=None) -> list[list[int]]:
        hidden = self.hidden(word_ids, attention_mask)
        bio = self.crf.decode(self.bio(hidden), attention_mask.bool())
        found = [(b, s, e) for b, row in enumerate(bio) for s, e in spans(row)]
        label_id = self.label_id
        out = [[label_id["O"]] * len(row) for row in bio]
        if not found:
            return out
        best = self.type_logits(self.span_features(hidden, found)).argmax(dim=1).tolist()
        for (b, start, end), t in zip(found, best):
            out[b][start] = label_id[f"B-{self.types[t]}"]
            for i in range(start + 1, end):
                out[b][i] = label_id[f"I-{self.types[t]}"]
        return out


def type_vectors(types: list[str], vocab, word_vectors: torch.Tensor, ngram_vectors: torch.Tensor | None,
                 seed: int) -> torch.Tensor:
    """The fixed type representations: N(0, 1) plus the sum of the description words' vectors (words the
    vocabulary lacks add nothing), then the description's mean n-gram vector where there are n-grams."""
    g = torch.Generator().manual_seed(seed)
    word_dim = word_vectors.size(1)
    out = []
    for t in types:
        words = [vocab.word_index[w] for w in describe(t) if w in vocab.word_index]
        vec = torch.randn(word_dim, generator=g) + (word_vectors[words].sum(0) if words else 0)
        if ngram_vectors is not None:
            ngram = ngram_vectors[words].mean(0) if words else torch.randn(ngram_vectors.size(1), generator=g)
            vec = torch.cat([vec, ngram])
        out.append(vec)
    return torch.stack(out)
