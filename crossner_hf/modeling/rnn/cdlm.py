"""The cross-domain language model (Jia, Liang & Zhang, ACL 2019) as a ``transformers`` model.

A Lample-style BiLSTM-CRF (:mod:`.layers`: word embeddings ++ character CNN, dropout 0.5, one
BiLSTM layer of 100 units per direction, dropout 0.5) whose LSTM weights are not parameters:
a parameter generation network makes all of them for each (domain, task) pair,
``theta(d, t) = I_t · (I_d · W)`` with ``W`` of shape (task dim 8, domain dim 8, P), domain
and task embeddings of size 8, purely bilinear (no bias, no non-linearity), regenerated on
every forward pass and applied with ``torch.func.functional_call`` over an ``nn.LSTM``
template (PyTorch gate order i, f, g, o). Each domain has its own linear layer + CRF for
NER; the language model is bidirectional (forward states predict the next word, backward
states the previous one; ``<s>`` at both ends) with one output layer shared by domains and
directions, trained with the sampled softmax of :mod:`.sampled_softmax` (distinct
log-uniform negatives, expected-count correction) and evaluated with the full softmax.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from crossner_hf.modeling.rnn.bilstm_crf import BiLSTMCRFConfig, RNNTaggerPreTrainedModel
from crossner_hf.modeling.rnn.crf import CRF
from crossner_hf.modeling.rnn.layers import TaggerOutput, WordCharEmbedding, bilstm, lstm_template, tagger_output
from crossner_hf.modeling.rnn.sampled_softmax import sampled_softmax_loss

SOURCE, TARGET = 0, 1
NER, LM = 0, 1
BOUNDARY_ID = 2  # <s> in WordCharVocab


class CDLMConfig(BiLSTMCRFConfig):
    model_type = "crossner_cdlm"

    def __init__(self, domain_dim: int = 8, task_dim: int = 8, lm_negatives: int = 50,
                 target_num_labels: int | None = None, target_id2label: dict | None = None,
                 lm_loss_reduction: str = "word", generator: str = "domain-task", **kwargs):
        super().__init__(**kwargs)
        if generator not in GENERATORS:
            raise ValueError(f"generator={generator!r}: choose one of {', '.join(GENERATORS)}.")
        self.generator = generator
        if lm_loss_reduction not in ("word", "sentence"):
            raise ValueError(f"lm_loss_reduction={lm_loss_reduction!r}: choose word (a mean per word) or sentence "
                             "(summed over words, divided by sentences: the release's ave_batch_loss).")
        self.domain_dim, self.task_dim, self.lm_negatives = domain_dim, task_dim, lm_negatives
        self.lm_loss_reduction = lm_loss_reduction
        self.target_num_labels = target_num_labels if target_num_labels is not None else self.num_labels
        self.target_id2label = ({int(k): v for k, v in target_id2label.items()} if target_id2label
                                else dict(self.id2label))


GENERATORS = ("domain-task", "task", "domain", "shared")
"""How the LSTM's parameters depend on (domain, task): the paper's model and its ablations (004:1013-1028).

``domain-task``: theta(d, t) = I_t · (I_d · W) (FINAL); ``task``: theta(t) = I_t · W, the domains share
(CO-LM); ``domain``: theta(d) = I_d · W, the tasks share (CO-NER); ``shared``: one parameter vector for
every (domain, task) (the MULTITASK baselines, 004:856-868, 004:989-995)."""


class ParameterGenerator(nn.Module):
    """theta(d, t) = I_t · (I_d · W): the LSTM's parameter vector for a (domain, task) pair (or, for the
    ablations of :data:`GENERATORS`, for a task, a domain, or for all pairs alike)."""

    def __init__(self, n_params: int, hidden_size: int, domain_dim: int = 8, task_dim: int = 8,
                 n_domains: int = 2, n_tasks: int = 2, conditioning: str = "domain-task"):
        super().__init__()
        if conditioning not in GENERATORS:
            raise ValueError(f"generator {conditioning!r}: choose one of {', '.join(GENERATORS)}.")
        self.conditioning = conditioning
        bound = 1.0 / math.sqrt(hidden_size)  # nn.LSTM's own initial range for the generated weights
        dims = {"domain-task": (task_dim, domain_dim), "task": (task_dim,), "domain": (domain_dim,), "shared": ()}
        self.W = nn.Parameter(torch.empty(*dims[conditioning], n_params).uniform_(-bound, bound))
        if conditioning in ("domain-task", "domain"):
            self.domain = nn.Parameter(torch.empty(n_domains, domain_dim).uniform_(-(3 / domain_dim) ** 0.5,
                                                                                  (3 / domain_dim) ** 0.5))
        if conditioning in ("domain-task", "task"):
            self.task = nn.Parameter(torch.empty(n_tasks, task_dim).uniform_(-(3 / task_dim) ** 0.5,
                                                                            (3 / task_dim) ** 0.5))

    def forward(self, domain: int, task: int) -> torch.Tensor:
        if self.conditioning == "shared":
            return self.W
        if self.conditioning == "task":
            return self.task[task] @ self.W
        if self.conditioning == "domain":
            return self.domain[domain] @ self.W
        by_domain = torch.einsum("d,tdp->tp", self.domain[domain], self.W)
        return self.task[task] @ by_domain


class CDLMForTokenClassification(RNNTaggerPreTrainedModel):
    """Cross-domain LM + NER with a generated BiLSTM (see the module docstring)."""

    config_class = CDLMConfig
    base_model_prefix = "cdlm"

    def __init__(self, config: CDLMConfig):
        super().__init__(config)
        if config.char_encoder != "cnn" or config.num_layers != 1:
            raise ValueError("CDLM generates one BiLSTM layer over words ++ a character CNN (the paper's network); "
                             "char_encoder='ngram' and num_layers > 1 are BiLSTM-CRF options.")
        self.embed = WordCharEmbedding(config)
        self.shapes = [(name, p.shape) for name, p in self._make_template("meta").named_parameters()]
        self._templates: dict[str, nn.LSTM] = {}  # per device; plain dict: not submodules, no free weights
        self.n_lstm_params = sum(shape.numel() for _, shape in self.shapes)
        self.generator = ParameterGenerator(self.n_lstm_params, config.hidden_size, config.domain_dim, config.task_dim,
                                            conditioning=getattr(config, "generator", "domain-task"))
        self.dropout = nn.Dropout(config.dropout)
        self.classifiers = nn.ModuleList([nn.Linear(2 * config.hidden_size, config.num_labels),
                                          nn.Linear(2 * config.hidden_size, config.target_num_labels)])
        self.crfs = nn.ModuleList([CRF(config.num_labels), CRF(config.target_num_labels)])
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size)
        self.post_init()

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
            self._templates[key] = lstm_template(self.embed.output_dim, self.config.hidden_size, word_ids.device)
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
        return tagger_output(self.crfs[domain], emissions, labels, attention_mask, self.config.loss_reduction)

    @torch.no_grad()
    def decode(self, word_ids, char_ids, attention_mask, domain: int = TARGET, crf_domain: int | None = None):
        """Viterbi tags; zero-shot tags the target with theta(target, NER) and the source's head and CRF."""
        crf_domain = domain if crf_domain is None else crf_domain
        feats = self.encode(word_ids, char_ids, attention_mask, domain, NER)
        return self.crfs[crf_domain].decode(self.classifiers[crf_domain](feats), attention_mask.bool())

    # ------------------------------------------------------------------ language model

    def lm_loss(self, word_ids, char_ids, attention_mask, domain: int) -> torch.Tensor:
        """0.5 x (forward + backward) LM loss, per word or per sentence (``lm_loss_reduction``); sampled
        softmax when training, full softmax in eval."""
        h = self.encode(word_ids, char_ids, attention_mask, domain, LM)
        hidden = self.config.hidden_size
        fwd, bwd = h[..., :hidden], h[..., hidden:]
        mask = attention_mask.bool()
        lengths = mask.sum(1)
        # forward targets: the next word, <s> after the last; backward: the previous word, <s> before the first
        nxt = torch.full_like(word_ids, BOUNDARY_ID)
        nxt[:, :-1] = word_ids[:, 1:]
        nxt = torch.where(torch.arange(word_ids.size(1), device=word_ids.device) == (lengths - 1).unsqueeze(1),
                          torch.full_like(nxt, BOUNDARY_ID), nxt)
        prev = torch.full_like(word_ids, BOUNDARY_ID)
        prev[:, 1:] = word_ids[:, :-1]
        # per word (default: a summed LM loss over ~700 words swamps the NER losses) or per sentence (the release)
        n = mask.sum().clamp(min=1) if self.config.lm_loss_reduction == "word" else word_ids.size(0)
        loss_f = self._softmax_loss(fwd[mask], nxt[mask]) / n
        loss_b = self._softmax_loss(bwd[mask], prev[mask]) / n
        return 0.5 * (loss_f + loss_b)

    def _softmax_loss(self, states: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        # a sample as large as the vocabulary (less <pad>) is the vocabulary: the full softmax is exact and cheaper
        if not self.training or not 0 < self.config.lm_negatives < self.config.vocab_size - 1:
            return nn.functional.cross_entropy(self.lm_head(states), targets, reduction="sum")
        return sampled_softmax_loss(self.lm_head.weight, self.lm_head.bias, states, targets,
                                    self.config.lm_negatives, self.config.vocab_size)
