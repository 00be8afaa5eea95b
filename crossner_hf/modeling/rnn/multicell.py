"""The multi-cell compositional LSTM (Jia & Zhang, ACL 2020) as a ``transformers`` model.

The release is ``jiachenwestlake/Multi-Cell_LSTM``, ``SDA/`` (``model/MultiCell_LSTM_compose.py``,
``cell2entity.py``, ``wordsequence.py``, ``seqlabel.py``). Words are GloVe 100d ++ a character
CNN (30-d characters, 50 filters, width 3) ++ optionally the last layer of a BERT encoder at each
word's first sub-word; dropout 0.5. One bidirectional layer of 100 units a direction, where each
direction keeps one cell per entity type of source ∪ target (``O`` included; a type shared by name
is one cell), and a compositional cell per step:

- each entity cell ``k`` of the current domain: ``[i_k; c~_k] = W_x^k x_t + b^k + W_h^k h_{t-1}``,
  ``c_k = σ(i_k) ⊙ tanh(c~_k) + (1 - σ(i_k)) ⊙ c_{t-1}``;
- the compositional cell: ``[i; o; c~] = W_x x_t + b + W_h h_{t-1}``; it attends over the domain's
  entity cells with additive attention (``v · tanh(P_q c~ + P_k c_k)``, one ``P_q, P_k, v`` per domain),
  ``c_t = (1 - σ(i)) ⊙ c_{t-1} + σ(i) ⊙ Σ_k a_k c_k``, ``h_t = σ(o) ⊙ tanh(c_t)``;
- separate source and target tag layers and CRFs; a linear type logit per cell over the concatenated
  (both directions) cell states; the attention of the two directions averaged.

Loss per batch (``seqlabel.py``, ``ave_batch_loss``: sums divided by sentences): ``rate`` x CRF NLL
(``rate``: ``target_loss_rate`` on target batches, 1 on source ones) + the token-level NLL of each
word's type over the domain's cell logits + the same NLL over ``log_softmax`` of the averaged
attention probabilities, as the release computes it.

As the release: cells, type logits and the two domains' attention projections start as copies of
one initialisation (``copy.deepcopy`` of one layer), and the backward direction runs on each
sentence reversed within its length. Differences (``docs/fidelity.md``): the source attention
uses its own key projection (the release's ``Compute_Add_Attention.forward`` projects the source
cells with the query projection, leaving ``cell_proj_S`` unused); BIO tags (the release converts to
BIOES); CRF with start/end transition vectors (NCRF++ adds START/STOP tags); the per-cell linear
layers run as one batched product (the same arithmetic); a frozen encoder runs in eval mode (the
release left BERT's dropout on under ``no_grad``).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFConfig, RNNTaggerPreTrainedModel
from crossner_hf.modeling.rnn.cdlm import SOURCE, TARGET
from crossner_hf.modeling.rnn.crf import CRF
from crossner_hf.modeling.rnn.layers import TaggerOutput, WordCharEmbedding, reverse_padded


def type_of(label: str) -> str:
    """The cell a BIO label belongs to: ``O``, or its entity type (the release upper-cases; names here are
    compared as they are, and CrossNER spells every domain's shared types alike)."""
    return "O" if label == "O" else label[2:]


def domain_types(labels: list[str]) -> list[str]:
    """``O`` then the entity types of a BIO label list in order of first appearance."""
    out = ["O"]
    for label in labels:
        if type_of(label) not in out:
            out.append(type_of(label))
    return out


class MultiCellConfig(BiLSTMCRFConfig):
    model_type = "crossner_multicell"

    def __init__(self, source_id2label: dict | None = None, feature_encoder: dict | None = None,
                 finetune_features: bool = False, target_loss_rate: float = 1.0, **kwargs):
        kwargs.setdefault("loss_reduction", "mean")
        super().__init__(**kwargs)
        self.source_id2label = ({int(k): v for k, v in source_id2label.items()} if source_id2label
                                else dict(self.id2label))
        self.feature_encoder = feature_encoder
        self.finetune_features = finetune_features
        self.target_loss_rate = target_loss_rate

    @property
    def source_labels(self) -> list[str]:
        return [self.source_id2label[i] for i in range(len(self.source_id2label))]

    @property
    def target_labels(self) -> list[str]:
        return [self.id2label[i] for i in range(self.num_labels)]

    @property
    def cell_types(self) -> list[str]:
        """Source types first, then the target's new ones (the release's ``NER_create_entity_alphabet``)."""
        out = domain_types(self.source_labels)
        return out + [t for t in domain_types(self.target_labels) if t not in out]


def _uniform(*shape: int, fan_in: int) -> torch.Tensor:
    bound = 1.0 / math.sqrt(fan_in)  # nn.Linear's initial range
    return torch.empty(*shape).uniform_(-bound, bound)


class MultiCellDirection(nn.Module):
    """One direction of the multi-cell compositional LSTM over all ``num_cells`` cells; a forward pass uses the
    cells of one domain (``cells``: their indices)."""

    def __init__(self, input_size: int, hidden_size: int, num_cells: int, reverse: bool):
        super().__init__()
        h = hidden_size
        self.hidden_size, self.reverse = h, reverse
        # every cell starts as a copy of one nn.Linear (the release deep-copies one layer per cell)
        self.cell_x = nn.Parameter(_uniform(input_size, 2 * h, fan_in=input_size).expand(num_cells, -1, -1).clone())
        self.cell_bias = nn.Parameter(_uniform(2 * h, fan_in=input_size).expand(num_cells, -1).clone())
        self.cell_h = nn.Parameter(_uniform(h, 2 * h, fan_in=h).expand(num_cells, -1, -1).clone())
        self.compose_x = nn.Linear(input_size, 3 * h)
        self.compose_h = nn.Linear(h, 3 * h, bias=False)
        query, key = nn.Linear(h, 2 * h, bias=False), nn.Linear(h, 2 * h, bias=False)
        # per domain (source, target): the target's projections start as copies of the source's, v drawn anew
        self.query = nn.ModuleList([query, copy.deepcopy(query)])
        self.key = nn.ModuleList([key, copy.deepcopy(key)])
        self.v = nn.ParameterList([nn.Parameter(_uniform(2 * h, fan_in=2 * h)) for _ in range(2)])

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, cells: torch.Tensor, domain: int
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``x`` (B, T, I) -> hidden (B, T, H), cell states (B, T, K, H), attention (B, T, K)."""
        if self.reverse:
            x = reverse_padded(x, lengths)
        b, steps, _ = x.shape
        h_size = self.hidden_size
        # the input parts of every gate for all steps at once; only the recurrent parts run step by step
        cell_in = torch.einsum("bti,kio->btko", x, self.cell_x[cells]) + self.cell_bias[cells]
        comp_in = self.compose_x(x)
        cell_h = self.cell_h[cells]
        query, key, v = self.query[domain], self.key[domain], self.v[domain]
        h = x.new_zeros(b, h_size)
        c = x.new_zeros(b, h_size)
        hs, cs, ps = [], [], []
        for t in range(steps):
            gate, cand = (cell_in[:, t] + torch.einsum("bh,kho->bko", h, cell_h)).split(h_size, dim=-1)
            gate = torch.sigmoid(gate)
            entity = gate * torch.tanh(cand) + (1 - gate) * c.unsqueeze(1)  # (B, K, H)
            i, o, cand_c = (comp_in[:, t] + self.compose_h(h)).split(h_size, dim=-1)
            i, o = torch.sigmoid(i), torch.sigmoid(o)
            scores = torch.tanh(query(torch.tanh(cand_c)).unsqueeze(1) + key(entity)) @ v  # (B, K)
            probs = torch.softmax(scores, dim=1)
            c = (1 - i) * c + i * torch.einsum("bk,bkh->bh", probs, entity)
            h = o * torch.tanh(c)
            hs.append(h)
            cs.append(entity)
            ps.append(probs)
        out = (torch.stack(hs, 1), torch.stack(cs, 1), torch.stack(ps, 1))
        if self.reverse:
            out = tuple(reverse_padded(y, lengths) for y in out)
        return out


@dataclass
class MultiCellOutput(TaggerOutput):
    crf_loss: torch.Tensor | None = None
    type_loss: torch.Tensor | None = None
    attention_loss: torch.Tensor | None = None


class MultiCellForTokenClassification(RNNTaggerPreTrainedModel):
    """The multi-cell compositional LSTM with source and target CRFs; ``decode`` tags with the target's.

    With ``config.feature_encoder`` the model holds that encoder (saved with it) and its tokenizer
    (``feature_tokenizer``, saved beside it); :meth:`extra_inputs` turns word lists into the features
    (frozen encoder) or the encoder's inputs (``finetune_features``).
    """

    config_class = MultiCellConfig
    base_model_prefix = "multicell"

    def __init__(self, config: MultiCellConfig):
        super().__init__(config)
        self.embed = WordCharEmbedding(config)
        self.feature_encoder = None
        feature_dim = 0
        if config.feature_encoder:
            from transformers import AutoConfig, AutoModel

            spec = dict(config.feature_encoder)
            self.feature_encoder = AutoModel.from_config(AutoConfig.for_model(spec.pop("model_type"), **spec))
            feature_dim = self.feature_encoder.config.hidden_size
            if not config.finetune_features:
                self.feature_encoder.requires_grad_(False)
        self.feature_dropout = nn.Dropout(config.dropout)
        cells = config.cell_types
        input_size = self.embed.output_dim + feature_dim
        self.forward_cells = MultiCellDirection(input_size, config.hidden_size, len(cells), reverse=False)
        self.backward_cells = MultiCellDirection(input_size, config.hidden_size, len(cells), reverse=True)
        self.dropout = nn.Dropout(config.dropout)
        self.tag = nn.ModuleList([nn.Linear(2 * config.hidden_size, len(config.source_labels)),
                                  nn.Linear(2 * config.hidden_size, config.num_labels)])
        self.crf = nn.ModuleList([CRF(len(config.source_labels)), CRF(config.num_labels)])
        # one linear type logit per cell over both directions' cell states, all copies of one layer
        self.type_weight = nn.Parameter(_uniform(2 * config.hidden_size, fan_in=2 * config.hidden_size)
                                        .expand(len(cells), -1).clone())
        self.type_bias = nn.Parameter(_uniform(1, fan_in=2 * config.hidden_size).expand(len(cells)).clone())
        self.set_index_buffers()
        self.feature_tokenizer = None
        self.feature_cache: dict[tuple[str, ...], torch.Tensor] | None = None  # set by a recipe with a frozen encoder
        # every sentence a run will use, set with the cache: scored all at once, in one fixed order, at the first step
        self.feature_sentences: list[tuple[str, ...]] | None = None
        self.post_init()

    def set_index_buffers(self) -> None:
        cells, device = self.config.cell_types, self.type_weight.device
        for domain, labels in ((SOURCE, self.config.source_labels), (TARGET, self.config.target_labels)):
            types = domain_types(labels)
            self.register_buffer(f"cells_{domain}", torch.tensor([cells.index(t) for t in types], device=device),
                                 persistent=False)
            # each label id -> the position of its type among the domain's cells
            self.register_buffer(f"label_cell_{domain}", torch.tensor([types.index(type_of(t)) for t in labels],
                                                                      device=device), persistent=False)

    # -- features -------------------------------------------------------------------------------------------
    def encoder_inputs(self, sentences) -> dict[str, torch.Tensor]:
        """The feature encoder's inputs and each word's first sub-word position (-1: none, truncated away)."""
        if self.feature_tokenizer is None:
            raise ValueError("This model reads encoder features but has no feature_tokenizer: load it with "
                             "from_pretrained(folder), which reads the tokenizer saved beside the model.")
        enc = self.feature_tokenizer([list(s) for s in sentences], is_split_into_words=True, truncation=True,
                                     padding=True, return_tensors="pt")
        starts = torch.full((len(sentences), max(len(s) for s in sentences)), -1, dtype=torch.long)
        for b in range(len(sentences)):
            for pos, word in enumerate(enc.word_ids(b)):
                if word is not None and starts[b, word] < 0:
                    starts[b, word] = pos
        return {"feature_input_ids": enc["input_ids"], "feature_attention_mask": enc["attention_mask"],
                "word_starts": starts}

    def encode_features(self, feature_input_ids, feature_attention_mask, word_starts) -> torch.Tensor:
        """Last-layer states at each word's first sub-word: (B, T, F); zeros where a word has no sub-word."""
        states = self.feature_encoder(input_ids=feature_input_ids, attention_mask=feature_attention_mask
                                      ).last_hidden_state
        picked = states.gather(1, word_starts.clamp(min=0).unsqueeze(-1).expand(-1, -1, states.size(-1)))
        return picked * (word_starts >= 0).unsqueeze(-1).to(picked.dtype)

    @torch.no_grad()
    def _frozen_features(self, sentences, device) -> torch.Tensor:
        keys = [tuple(s) for s in sentences]
        cache = self.feature_cache if self.feature_cache is not None else {}
        # In a padded batch a sentence's features move in the last bits with the batch's other sentences (attention
        # kernels tile by length): scored as the batches came, a run resumed with an empty cache computed other
        # features than the uninterrupted run, and its losses parted at the 8th digit. So every sentence the run
        # uses is scored at its first step in one order fixed by the sentences alone (words, then text: the same
        # batches in any run on the same data), and a sentence outside that set alone, in a batch of its own.
        planned, self.feature_sentences = self.feature_sentences or [], None
        batches = [planned[i:i + 64] for i in range(0, len(planned), 64)]
        known = set(planned)
        batches += [[k] for k in dict.fromkeys(keys) if k not in cache and k not in known]
        batches = [[k for k in batch if k not in cache] for batch in batches]
        if any(batches):
            was = self.feature_encoder.training
            self.feature_encoder.eval()  # fixed features: no dropout in a frozen encoder
            for batch in filter(None, batches):
                inputs = {name: v.to(device) for name, v in self.encoder_inputs(batch).items()}
                for k, f in zip(batch, self.encode_features(**inputs).float().cpu()):
                    cache[k] = f[: len(k)]
            self.feature_encoder.train(was)
        out = torch.zeros(len(keys), max(len(k) for k in keys), self.feature_encoder.config.hidden_size)
        for b, k in enumerate(keys):
            out[b, : len(k)] = cache[k]
        return out.to(device)

    def extra_inputs(self, sentences, device) -> dict[str, torch.Tensor]:
        """What :meth:`forward` needs beyond word and character ids for ``sentences`` (word lists)."""
        if self.feature_encoder is None:
            return {}
        if not self.config.finetune_features:
            return {"features": self._frozen_features(sentences, device)}
        return {k: v.to(device) for k, v in self.encoder_inputs(sentences).items()}

    # -- the network ----------------------------------------------------------------------------------------
    def run(self, word_ids, char_ids, attention_mask, domain: int, features=None, feature_input_ids=None,
            feature_attention_mask=None, word_starts=None):
        """Emissions (B, T, labels of ``domain``), type logits (B, T, K_d), averaged attention (B, T, K_d)."""
        x = self.embed(word_ids, char_ids)
        if self.feature_encoder is not None:
            if features is None:
                features = self.encode_features(feature_input_ids, feature_attention_mask, word_starts)
            x = torch.cat([x, self.feature_dropout(features.to(x.dtype))], dim=-1)
        lengths = attention_mask.sum(1)
        cells = getattr(self, f"cells_{domain}")
        h_f, c_f, p_f = self.forward_cells(x, lengths, cells, domain)
        h_b, c_b, p_b = self.backward_cells(x, lengths, cells, domain)
        hidden = self.dropout(torch.cat([h_f, h_b], dim=-1))
        cell_states = self.dropout(torch.cat([c_f, c_b], dim=-1))  # (B, T, K, 2H)
        type_logits = (cell_states * self.type_weight[cells]).sum(-1) + self.type_bias[cells]
        return self.tag[domain](hidden), type_logits, (p_f + p_b) / 2

    def forward(self, word_ids, char_ids, attention_mask, labels=None, domain: int = TARGET, **inputs
                ) -> MultiCellOutput:
        emissions, type_logits, attention = self.run(word_ids, char_ids, attention_mask, domain, **inputs)
        if labels is None:
            return MultiCellOutput(logits=emissions)
        mask = attention_mask.bool()
        gold = labels.clamp(min=0)
        n = word_ids.size(0)
        crf_loss = -self.crf[domain](emissions, gold, mask).sum() / n
        cell_of = getattr(self, f"label_cell_{domain}")[gold]
        type_loss = _token_nll(torch.log_softmax(type_logits, -1), cell_of, mask) / n
        # the release takes log_softmax of the averaged probabilities (not their log): kept as it trained
        attention_loss = _token_nll(torch.log_softmax(attention, -1), cell_of, mask) / n
        rate = self.config.target_loss_rate if domain == TARGET else 1.0
        return MultiCellOutput(loss=rate * crf_loss + type_loss + attention_loss, logits=emissions,
                               crf_loss=crf_loss, type_loss=type_loss, attention_loss=attention_loss)

    @torch.no_grad()
    def decode(self, word_ids, char_ids, attention_mask, domain: int = TARGET, **inputs) -> list[list[int]]:
        emissions, _, _ = self.run(word_ids, char_ids, attention_mask, domain, **inputs)
        return self.crf[domain].decode(emissions, attention_mask.bool())

    # -- saving with the tokenizer --------------------------------------------------------------------------
    def save_pretrained(self, save_directory, *args, **kwargs):
        super().save_pretrained(save_directory, *args, **kwargs)
        if self.feature_tokenizer is not None:
            self.feature_tokenizer.save_pretrained(save_directory)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *args, **kwargs):
        model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)  # index buffers rebuilt there
        if model.config.feature_encoder:
            from transformers import AutoTokenizer

            model.feature_tokenizer = AutoTokenizer.from_pretrained(pretrained_model_name_or_path)
        return model


def _token_nll(log_probs: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Summed negative log-probability of ``gold`` at the unmasked positions."""
    picked = log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
    return -(picked * mask.to(picked.dtype)).sum()


def attach_feature_encoder(model: MultiCellForTokenClassification, name_or_path: str | Path) -> None:
    """Load the pre-trained encoder's weights and tokenizer into a model built with its config."""
    from transformers import AutoModel, AutoTokenizer

    pretrained = AutoModel.from_pretrained(name_or_path)
    missing, unexpected = model.feature_encoder.load_state_dict(pretrained.state_dict(), strict=False)
    if missing:
        raise ValueError(f"{name_or_path}: the encoder lacks weights {missing[:5]}...; give the folder or Hub id of "
                         "a BERT-style encoder (a DAPT output folder works).")
    model.feature_tokenizer = AutoTokenizer.from_pretrained(name_or_path)
