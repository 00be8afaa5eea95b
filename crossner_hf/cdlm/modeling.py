"""BiLSTM-CRF (Lample et al. 2016) and cross-domain LM (Jia, Liang & Zhang, ACL 2019) as ``transformers`` models.

Both read ``word_ids`` (B, T), ``char_ids`` (B, T, L) and ``attention_mask`` (B, T) from
:class:`crossner_hf.cdlm.vocab.WordCharVocab`: word embeddings (100-d) concatenated with a
character CNN (30-d characters, 50 filters, kernel 3, max-pooled), dropout 0.5, a one-layer
bidirectional LSTM (100 per direction), dropout 0.5, a linear layer and a CRF.

In :class:`CDLMForTokenClassification` the LSTM's weights are not parameters: a parameter
generation network makes all of them for each (domain, task) pair,
``theta(d, t) = I_t · (I_d · W)`` with ``W`` of shape (task dim 8, domain dim 8, P), domain
and task embeddings of size 8, purely bilinear (no bias, no non-linearity), regenerated on
every forward pass and applied with ``torch.func.functional_call`` over an ``nn.LSTM``
template (PyTorch gate order i, f, g, o). Each domain has its own linear layer + CRF for
NER; the language model is bidirectional (forward states predict the next word, backward
states the previous one; ``<s>`` at both ends) with one output layer shared by domains and
directions, trained with a sampled softmax (log-uniform negatives over frequency-sorted
ids, log-Q correction, accidental hits masked) and evaluated with the full softmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel
from transformers.utils import ModelOutput

from .crf import CRF

SOURCE, TARGET = 0, 1
NER, LM = 0, 1


class BiLSTMCRFConfig(PretrainedConfig):
    model_type = "crossner_bilstm_crf"

    def __init__(self, vocab_size: int = 3, char_vocab_size: int = 2, word_dim: int = 100, char_dim: int = 30,
                 char_filters: int = 50, char_kernel: int = 3, hidden_size: int = 100, dropout: float = 0.5,
                 loss_reduction: str = "sum", **kwargs):
        super().__init__(**kwargs)
        if loss_reduction not in ("sum", "mean"):
            raise ValueError(f"loss_reduction={loss_reduction!r}: choose sum (the paper) or mean (per sentence).")
        self.vocab_size, self.char_vocab_size = vocab_size, char_vocab_size
        self.word_dim, self.char_dim, self.char_filters, self.char_kernel = word_dim, char_dim, char_filters, char_kernel
        self.hidden_size, self.dropout, self.loss_reduction = hidden_size, dropout, loss_reduction


class CDLMConfig(BiLSTMCRFConfig):
    model_type = "crossner_cdlm"

    def __init__(self, domain_dim: int = 8, task_dim: int = 8, lm_negatives: int = 50,
                 target_num_labels: int | None = None, target_id2label: dict | None = None, **kwargs):
        super().__init__(**kwargs)
        self.domain_dim, self.task_dim, self.lm_negatives = domain_dim, task_dim, lm_negatives
        self.target_num_labels = target_num_labels if target_num_labels is not None else self.num_labels
        self.target_id2label = ({int(k): v for k, v in target_id2label.items()} if target_id2label
                                else dict(self.id2label))


@dataclass
class TaggerOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None


class WordCharEmbedding(nn.Module):
    """Word embedding ++ max-pooled character CNN, with dropout on characters and on the result."""

    def __init__(self, config: BiLSTMCRFConfig):
        super().__init__()
        self.words = nn.Embedding(config.vocab_size, config.word_dim, padding_idx=0)
        self.chars = nn.Embedding(config.char_vocab_size, config.char_dim, padding_idx=0)
        self.cnn = nn.Conv1d(config.char_dim, config.char_filters, config.char_kernel, padding=config.char_kernel // 2)
        self.dropout = nn.Dropout(config.dropout)
        self.output_dim = config.word_dim + config.char_filters

    def forward(self, word_ids: torch.Tensor, char_ids: torch.Tensor) -> torch.Tensor:
        b, t, length = char_ids.shape
        chars = self.dropout(self.chars(char_ids.view(b * t, length))).transpose(1, 2)  # (BT, C, L)
        conv = self.cnn(chars).masked_fill((char_ids.view(b * t, 1, length) == 0), float("-inf"))
        pooled = conv.max(dim=2).values
        pooled = torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled)).view(b, t, -1)
        return self.dropout(torch.cat([self.words(word_ids), pooled], dim=-1))


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``lengths[b]`` steps in place of a (B, T, ...) tensor; padding stays at the end."""
    t = torch.arange(x.size(1), device=x.device).unsqueeze(0)
    idx = torch.where(t < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - t, t)
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand_as(x))


def _uni_template(input_size: int, hidden_size: int, device) -> nn.LSTM:
    # a unidirectional nn.LSTM whose own weights are never used (functional_call swaps in others); built on
    # the meta device and then given storage, so it draws no random numbers (resumed runs stay identical)
    template = nn.LSTM(input_size, hidden_size, batch_first=True, device="meta")
    if str(device) != "meta":
        template = template.to_empty(device=device)
    for p in template.parameters():
        p.requires_grad_(False)
    return template


def bilstm(x: torch.Tensor, lengths: torch.Tensor, params: dict[str, torch.Tensor], template: nn.LSTM) -> torch.Tensor:
    """A bidirectional one-layer LSTM over a right-padded batch, from ``nn.LSTM``-named parameters.

    The backward direction runs on each row reversed within its length, so padding never
    enters a real position's state; two padded unidirectional passes are faster on a CPU
    than one over a ``PackedSequence``.
    """
    forward = {k: v for k, v in params.items() if not k.endswith("_reverse")}
    backward = {k[: -len("_reverse")]: v for k, v in params.items() if k.endswith("_reverse")}
    out_f, _ = torch.func.functional_call(template, forward, (x,))
    out_b, _ = torch.func.functional_call(template, backward, (reverse_padded(x, lengths),))
    return torch.cat([out_f, reverse_padded(out_b, lengths)], dim=-1)


def _ner_loss(crf: CRF, emissions, labels, mask, reduction: str) -> torch.Tensor:
    llh = crf(emissions, labels.clamp(min=0), mask)
    return -(llh.sum() if reduction == "sum" else llh.mean())


class BiLSTMCRFForTokenClassification(PreTrainedModel):
    """The BiLSTM-CRF baseline; ``decode`` gives Viterbi tag ids per sentence."""

    config_class = BiLSTMCRFConfig
    base_model_prefix = "bilstm_crf"
    main_input_name = "word_ids"

    def __init__(self, config: BiLSTMCRFConfig):
        super().__init__(config)
        self.embed = WordCharEmbedding(config)
        self.lstm = nn.LSTM(self.embed.output_dim, config.hidden_size, batch_first=True, bidirectional=True)
        self._templates: dict[str, nn.LSTM] = {}
        self.dropout = nn.Dropout(config.dropout)
        self.classifier = nn.Linear(2 * config.hidden_size, config.num_labels)
        self.crf = CRF(config.num_labels)
        self.post_init()

    def _init_weights(self, module):  # keep PyTorch's own initialisation (NCRF++ does)
        pass

    def emissions(self, word_ids, char_ids, attention_mask) -> torch.Tensor:
        x = self.embed(word_ids, char_ids)
        key = str(x.device)
        if key not in self._templates:
            self._templates[key] = _uni_template(self.embed.output_dim, self.config.hidden_size, x.device)
        out = bilstm(x, attention_mask.sum(1), dict(self.lstm.named_parameters()), self._templates[key])
        return self.classifier(self.dropout(out))

    def forward(self, word_ids, char_ids, attention_mask, labels=None, **kwargs) -> TaggerOutput:
        emissions = self.emissions(word_ids, char_ids, attention_mask)
        loss = None
        if labels is not None:
            loss = _ner_loss(self.crf, emissions, labels, attention_mask.bool(), self.config.loss_reduction)
        return TaggerOutput(loss=loss, logits=emissions)

    @torch.no_grad()
    def decode(self, word_ids, char_ids, attention_mask) -> list[list[int]]:
        return self.crf.decode(self.emissions(word_ids, char_ids, attention_mask), attention_mask.bool())


class ParameterGenerator(nn.Module):
    """theta(d, t) = I_t · (I_d · W): the LSTM's parameter vector for a (domain, task) pair."""

    def __init__(self, n_params: int, hidden_size: int, domain_dim: int = 8, task_dim: int = 8,
                 n_domains: int = 2, n_tasks: int = 2):
        super().__init__()
        bound = 1.0 / math.sqrt(hidden_size)
        self.W = nn.Parameter(torch.empty(task_dim, domain_dim, n_params).uniform_(-bound, bound))
        self.domain = nn.Parameter(torch.empty(n_domains, domain_dim).uniform_(-(3 / domain_dim) ** 0.5,
                                                                              (3 / domain_dim) ** 0.5))
        self.task = nn.Parameter(torch.empty(n_tasks, task_dim).uniform_(-(3 / task_dim) ** 0.5, (3 / task_dim) ** 0.5))

    def forward(self, domain: int, task: int) -> torch.Tensor:
        by_domain = torch.einsum("d,tdp->tp", self.domain[domain], self.W)
        return self.task[task] @ by_domain


class CDLMForTokenClassification(PreTrainedModel):
    """Cross-domain LM + NER with a generated BiLSTM (see the module docstring)."""

    config_class = CDLMConfig
    base_model_prefix = "cdlm"
    main_input_name = "word_ids"

    def __init__(self, config: CDLMConfig):
        super().__init__(config)
        self.embed = WordCharEmbedding(config)
        self.shapes = [(name, p.shape) for name, p in self._make_template("meta").named_parameters()]
        self._templates: dict[str, nn.LSTM] = {}  # per device; plain dict: not submodules, no free weights
        self.n_lstm_params = sum(shape.numel() for _, shape in self.shapes)
        self.generator = ParameterGenerator(self.n_lstm_params, config.hidden_size, config.domain_dim, config.task_dim)
        self.dropout = nn.Dropout(config.dropout)
        self.classifiers = nn.ModuleList([nn.Linear(2 * config.hidden_size, config.num_labels),
                                          nn.Linear(2 * config.hidden_size, config.target_num_labels)])
        self.crfs = nn.ModuleList([CRF(config.num_labels), CRF(config.target_num_labels)])
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

    def _init_weights(self, module):
        pass

    def _make_template(self, device) -> nn.LSTM:
        # only for the parameter names and shapes of a bidirectional nn.LSTM (on meta: no memory, no RNG)
        return nn.LSTM(self.embed.output_dim, self.config.hidden_size, batch_first=True, bidirectional=True,
                       device=device)

    def lstm_parameters(self, domain: int, task: int) -> dict[str, torch.Tensor]:
        flat = self.generator(domain, task)
        out, start = {}, 0
        for name, shape in self.shapes:
            n = shape.numel()
            out[name] = flat[start:start + n].view(shape)
            start += n
        return out

    def encode(self, word_ids, char_ids, attention_mask, domain: int, task: int) -> torch.Tensor:
        key = str(word_ids.device)
        if key not in self._templates:
            self._templates[key] = _uni_template(self.embed.output_dim, self.config.hidden_size, word_ids.device)
        x = self.embed(word_ids, char_ids)
        out = bilstm(x, attention_mask.sum(1), self.lstm_parameters(domain, task), self._templates[key])
        return self.dropout(out)

    def emissions(self, word_ids, char_ids, attention_mask, domain: int) -> torch.Tensor:
        return self.classifiers[domain](self.encode(word_ids, char_ids, attention_mask, domain, NER))

    def forward(self, word_ids, char_ids, attention_mask, labels=None, domain: int = TARGET, task: int = NER,
                **kwargs) -> TaggerOutput:
        if task == LM:
            return TaggerOutput(loss=self.lm_loss(word_ids, char_ids, attention_mask, domain))
        emissions = self.emissions(word_ids, char_ids, attention_mask, domain)
        loss = None
        if labels is not None:
            loss = _ner_loss(self.crfs[domain], emissions, labels, attention_mask.bool(), self.config.loss_reduction)
        return TaggerOutput(loss=loss, logits=emissions)

    @torch.no_grad()
    def decode(self, word_ids, char_ids, attention_mask, domain: int = TARGET, crf_domain: int | None = None):
        """Viterbi tags; zero-shot tags the target with theta(target, NER) and the source's head and CRF."""
        crf_domain = domain if crf_domain is None else crf_domain
        feats = self.encode(word_ids, char_ids, attention_mask, domain, NER)
        return self.crfs[crf_domain].decode(self.classifiers[crf_domain](feats), attention_mask.bool())

    # ------------------------------------------------------------------ language model

    def lm_loss(self, word_ids, char_ids, attention_mask, domain: int) -> torch.Tensor:
        """0.5 x (forward + backward) LM loss per word; sampled softmax when training, full softmax in eval."""
        h = self.encode(word_ids, char_ids, attention_mask, domain, LM)
        hidden = self.config.hidden_size
        fwd, bwd = h[..., :hidden], h[..., hidden:]
        mask = attention_mask.bool()
        lengths = mask.sum(1)
        boundary = 2  # <s>
        # forward targets: the next word, <s> after the last; backward: the previous word, <s> before the first
        nxt = torch.full_like(word_ids, boundary)
        nxt[:, :-1] = word_ids[:, 1:]
        nxt = torch.where(torch.arange(word_ids.size(1), device=word_ids.device) == (lengths - 1).unsqueeze(1),
                          torch.full_like(nxt, boundary), nxt)
        prev = torch.full_like(word_ids, boundary)
        prev[:, 1:] = word_ids[:, :-1]
        n = mask.sum().clamp(min=1)  # per-word mean: a summed LM loss over ~700 words swamps the NER losses
        loss_f = self._softmax_loss(fwd[mask], nxt[mask]) / n
        loss_b = self._softmax_loss(bwd[mask], prev[mask]) / n
        return 0.5 * (loss_f + loss_b)

    def _softmax_loss(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        if not self.training or self.config.lm_negatives <= 0:
            return nn.functional.cross_entropy(self.lm_head(states), targets, reduction="sum")
        return sampled_softmax_loss(self.lm_head.weight, self.lm_head.bias, states, targets,
                                    self.config.lm_negatives, self.config.vocab_size)


def log_uniform_sample(n: int, vocab_size: int, generator: torch.Generator | None = None,
                       device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` distinct ids from P(k) = log((k+2)/(k+1)) / log(V+1) (ids sorted by frequency) and log Q(k)."""
    log_v = math.log(vocab_size + 1)
    u = torch.rand(4 * n + 16, generator=generator)
    ids = (torch.exp(u * log_v).floor().long() - 1).clamp(0, vocab_size - 1)
    ids = torch.unique(ids, sorted=False)[:n]
    probs = torch.log((ids.double() + 2) / (ids.double() + 1)) / log_v
    return ids.to(device), torch.log(probs).float().to(device)


def sampled_softmax_loss(weight, bias, states, targets, n_negatives: int, vocab_size: int) -> torch.Tensor:
    """Sampled softmax (summed over positions) with log-Q correction and accidental hits masked."""
    negatives, neg_logq = log_uniform_sample(n_negatives, vocab_size, device=states.device)
    true_logq = torch.log(torch.log((targets.double() + 2) / (targets.double() + 1)) / math.log(vocab_size + 1)).float()
    true_logits = (states * weight[targets]).sum(-1) + bias[targets] - true_logq
    neg_logits = states @ weight[negatives].T + bias[negatives] - neg_logq  # (N, S)
    neg_logits = neg_logits.masked_fill(negatives.unsqueeze(0) == targets.unsqueeze(1), float("-inf"))
    logits = torch.cat([true_logits.unsqueeze(1), neg_logits], dim=1)
    return -torch.log_softmax(logits, dim=1)[:, 0].sum()
