"""Building blocks shared by the two RNN taggers: word representations, the padded BiLSTM, the CRF loss.

Two word representations, one per architecture of the BiLSTM-CRF baseline:

- :class:`WordCharEmbedding` (Lample et al. 2016; the CDLM release, NCRF++): a word embedding
  concatenated with a max-pooled character CNN (30-d characters, 50 filters, kernel 3).
- :class:`WordNgramEmbedding` (the CrossNER release's ``BiLSTMTagger``): a word embedding
  (GloVe 300d) concatenated with a second per-word embedding of 100 dimensions initialised
  from character n-gram vectors (Hashimoto et al. 2017, torchtext's ``CharNGram``; see
  :func:`crossner_hf.modeling.rnn.vocab.load_char_ngram_vectors`); both are fine-tuned, as in the release.

:func:`bilstm` runs a bidirectional LSTM layer over a right-padded batch from ``nn.LSTM``-named
parameters (generated ones in CDLM); :func:`stacked_bilstm` stacks layers of an ``nn.LSTM``
with dropout between them, as ``nn.LSTM(num_layers=2, dropout=p)`` does.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers.utils import ModelOutput

from crossner_hf.modeling.rnn.crf import CRF


@dataclass
class TaggerOutput(ModelOutput):
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None


class WordCharEmbedding(nn.Module):
    """Word embedding ++ max-pooled character CNN, with dropout on characters and on the result
    (``char_filters=0``: words alone)."""

    def __init__(self, config):
        super().__init__()
        self.words = nn.Embedding(config.vocab_size, config.word_dim, padding_idx=0)
        self.use_chars = config.char_filters > 0
        if self.use_chars:
            self.chars = nn.Embedding(config.char_vocab_size, config.char_dim, padding_idx=0)
            self.cnn = nn.Conv1d(config.char_dim, config.char_filters, config.char_kernel,
                                 padding=config.char_kernel // 2)
        self.dropout = nn.Dropout(config.dropout)
        self.output_dim = config.word_dim + config.char_filters

    def forward(self, word_ids: torch.Tensor, char_ids: torch.Tensor) -> torch.Tensor:
        if not self.use_chars:
            return self.dropout(self.words(word_ids))
        b, t, length = char_ids.shape
        chars = self.dropout(self.chars(char_ids.view(b * t, length))).transpose(1, 2)  # (BT, C, L)
        conv = self.cnn(chars).masked_fill((char_ids.view(b * t, 1, length) == 0), float("-inf"))
        pooled = conv.max(dim=2).values
        pooled = torch.where(torch.isfinite(pooled), pooled, torch.zeros_like(pooled)).view(b, t, -1)
        return self.dropout(torch.cat([self.words(word_ids), pooled], dim=-1))


class WordNgramEmbedding(nn.Module):
    """Word embedding ++ a per-word character n-gram embedding, dropout on the result (CrossNER release)."""

    def __init__(self, config):
        super().__init__()
        self.words = nn.Embedding(config.vocab_size, config.word_dim, padding_idx=0)
        # char_ngram_dim 0: words alone (CrossNER Table 2's "BiLSTM-CRF (word)" row, 002:504)
        self.ngrams = nn.Embedding(config.vocab_size, config.char_ngram_dim, padding_idx=0) \
            if config.char_ngram_dim > 0 else None
        self.dropout = nn.Dropout(config.dropout)
        self.output_dim = config.word_dim + config.char_ngram_dim

    def forward(self, word_ids: torch.Tensor, char_ids: torch.Tensor | None = None) -> torch.Tensor:
        if self.ngrams is None:
            return self.dropout(self.words(word_ids))
        return self.dropout(torch.cat([self.words(word_ids), self.ngrams(word_ids)], dim=-1))


class _GradientReversal(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.scale * grad, None


def reverse_gradient(x: torch.Tensor, scale: float) -> torch.Tensor:
    """The identity forward; the gradient times ``-scale`` backward (Ganin et al. 2016's gradient reversal)."""
    return _GradientReversal.apply(x, scale)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each row's first ``lengths[b]`` steps of a (B, T, ...) tensor; padding stays at the end."""
    t = torch.arange(x.size(1), device=x.device).unsqueeze(0)
    idx = torch.where(t < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - t, t)
    return x.gather(1, idx.view(*idx.shape, *([1] * (x.dim() - 2))).expand_as(x))


def lstm_template(input_size: int, hidden_size: int, device) -> nn.LSTM:
    """A one-layer unidirectional ``nn.LSTM`` whose own weights are never used (``functional_call`` swaps
    others in). Built on the meta device, then given storage: it draws no random numbers, so resumed
    runs stay identical."""
    template = nn.LSTM(input_size, hidden_size, batch_first=True, device="meta")
    if str(device) != "meta":
        template = template.to_empty(device=device)
    for p in template.parameters():
        p.requires_grad_(False)
    return template


def bilstm(x: torch.Tensor, lengths: torch.Tensor, params: dict[str, torch.Tensor], template: nn.LSTM) -> torch.Tensor:
    """A bidirectional one-layer LSTM over a right-padded batch, from ``nn.LSTM``-named layer-0 parameters.

    The backward direction runs on each row reversed within its length, so padding never
    enters a real position's state; two padded unidirectional passes are faster on a CPU
    than one over a ``PackedSequence`` (and equal to it: tested).
    """
    forward = {k: v for k, v in params.items() if not k.endswith("_reverse")}
    backward = {k[: -len("_reverse")]: v for k, v in params.items() if k.endswith("_reverse")}
    out_f, _ = torch.func.functional_call(template, forward, (x,))
    out_b, _ = torch.func.functional_call(template, backward, (reverse_padded(x, lengths),))
    return torch.cat([out_f, reverse_padded(out_b, lengths)], dim=-1)


class StackedBiLSTM(nn.Module):
    """``nn.LSTM(bidirectional=True, num_layers=n, dropout=p)`` run layer by layer with :func:`bilstm`.

    The parameters are those of one ``nn.LSTM`` (names ``weight_ih_l0`` ... ``weight_hh_l1_reverse``),
    so checkpoints stay plain; each layer's input is the previous layer's output with dropout
    between layers, as ``nn.LSTM`` applies it.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, dropout: float = 0.0):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers=num_layers, batch_first=True, bidirectional=True,
                            dropout=dropout if num_layers > 1 else 0.0)
        self.between = nn.Dropout(dropout)
        self._templates: dict[tuple[str, int], nn.LSTM] = {}  # per (device, input size): not submodules

    def _template(self, input_size: int, device) -> nn.LSTM:
        key = (str(device), input_size)
        if key not in self._templates:
            self._templates[key] = lstm_template(input_size, self.lstm.hidden_size, device)
        return self._templates[key]

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        named = dict(self.lstm.named_parameters())
        for layer in range(self.lstm.num_layers):
            if layer:
                x = self.between(x)
            suffix = f"_l{layer}"
            params = {k.replace(suffix, "_l0"): v for k, v in named.items()
                      if k.endswith(suffix) or k.endswith(suffix + "_reverse")}
            x = bilstm(x, lengths, params, self._template(x.size(-1), x.device))
        return x


def tagger_output(crf: CRF, emissions: torch.Tensor, labels: torch.Tensor | None, attention_mask: torch.Tensor,
                  reduction: str) -> TaggerOutput:
    """Emissions as logits, with the negative CRF log-likelihood over the batch when ``labels`` are given,
    summed (NCRF++) or averaged per sentence (CrossNER)."""
    loss = None
    if labels is not None:
        llh = crf(emissions, labels.clamp(min=0), attention_mask.bool())
        loss = -(llh.sum() if reduction == "sum" else llh.mean())
    return TaggerOutput(loss=loss, logits=emissions)
