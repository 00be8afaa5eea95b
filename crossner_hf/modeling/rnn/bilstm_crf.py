"""The BiLSTM-CRF baseline as a ``transformers`` model, in the two architectures the papers used.

``architecture="lample"`` (Lample et al. 2016; the CDLM paper's single-task baseline, NCRF++):
word embeddings (GloVe 100d) ++ a character CNN, dropout 0.5, one BiLSTM layer of 100 units per
direction, dropout 0.5, a linear layer and a CRF; the loss is summed over the batch.

``architecture="crossner"`` (the CrossNER paper's Table 2 first row, ``src/model.py``
``BiLSTMTagger`` of its release): word embeddings (GloVe 300d) ++ 100-d character n-gram
embeddings per word, dropout 0.5, two BiLSTM layers of 256 units per direction with dropout 0.5
between them, a linear layer and a CRF; the loss is averaged over the sentences of a batch.
One documented difference: the release scored the CRF over padded positions too (as label
``O``); here padding is masked.

Inputs: ``word_ids`` (B, T), ``char_ids`` (B, T, L) (unused by the n-gram architecture) and
``attention_mask`` (B, T) from :class:`crossner_hf.modeling.rnn.vocab.WordCharVocab`.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from crossner_hf.modeling.rnn.crf import CRF
from crossner_hf.modeling.rnn.layers import (StackedBiLSTM, TaggerOutput, WordCharEmbedding, WordNgramEmbedding,
                                             reverse_gradient, tagger_output)

# the network shape of each architecture; the recipe's arguments hold the training settings
ARCHITECTURES: dict[str, dict] = {
    "lample": {"word_dim": 100, "hidden_size": 100, "num_layers": 1, "char_encoder": "cnn",
               "dropout_after_lstm": True, "loss_reduction": "sum"},
    "crossner": {"word_dim": 300, "hidden_size": 256, "num_layers": 2, "char_encoder": "ngram",
                 "dropout_after_lstm": False, "loss_reduction": "mean"},
    # Coach's stage-1 tagger is the crossner network over O/B/I (crossner_hf.modeling.rnn.coach)
    "coach": {"word_dim": 300, "hidden_size": 256, "num_layers": 2, "char_encoder": "ngram",
              "dropout_after_lstm": False, "loss_reduction": "mean"},
}


class BiLSTMCRFConfig(PretrainedConfig):
    model_type = "crossner_bilstm_crf"

    def __init__(self, vocab_size: int = 3, char_vocab_size: int = 2, word_dim: int = 100, char_dim: int = 30,
                 char_filters: int = 50, char_kernel: int = 3, hidden_size: int = 100, dropout: float = 0.5,
                 loss_reduction: str = "sum", num_layers: int = 1, char_encoder: str = "cnn",
                 char_ngram_dim: int = 100, dropout_after_lstm: bool = True, domain_classifier_hidden: int = 0,
                 **kwargs):
        super().__init__(**kwargs)
        if loss_reduction not in ("sum", "mean"):
            raise ValueError(f"loss_reduction={loss_reduction!r}: choose sum (NCRF++) or mean (per sentence, CrossNER).")
        if char_encoder not in ("cnn", "ngram"):
            raise ValueError(f"char_encoder={char_encoder!r}: choose cnn (Lample) or ngram (CrossNER release).")
        if num_layers < 1:
            raise ValueError(f"num_layers={num_layers}: a BiLSTM needs at least one layer.")
        self.vocab_size, self.char_vocab_size = vocab_size, char_vocab_size
        self.word_dim, self.char_dim, self.char_filters, self.char_kernel = word_dim, char_dim, char_filters, char_kernel
        self.hidden_size, self.dropout, self.loss_reduction = hidden_size, dropout, loss_reduction
        self.num_layers, self.char_encoder, self.char_ngram_dim = num_layers, char_encoder, char_ngram_dim
        self.dropout_after_lstm = dropout_after_lstm
        # > 0: a domain classifier (one hidden layer) over the BiLSTM states, trained adversarially (DANN)
        self.domain_classifier_hidden = domain_classifier_hidden


class RNNTaggerPreTrainedModel(PreTrainedModel):
    """What both RNN taggers share as ``transformers`` models: word ids in, PyTorch's own initialisation."""

    main_input_name = "word_ids"

    def _init_weights(self, module):  # keep PyTorch's own initialisation (NCRF++ and the CrossNER release do)
        pass

    def set_index_buffers(self) -> None:
        """(Re)build the non-persistent lookup tables derived from the config (label id -> type, ...)."""

    def extra_inputs(self, sentences: list[list[str]], device) -> dict[str, torch.Tensor]:
        """What ``forward`` and ``decode`` need beyond word and character ids for ``sentences`` (word lists):
        nothing here; the multi-cell LSTM adds its encoder features. Training and tagging both call it."""
        return {}

    @classmethod
    def from_pretrained(cls, *args, **kwargs):
        model = super().from_pretrained(*args, **kwargs)
        # transformers loads on the meta device and leaves non-persistent buffers uninitialised for _init_weights,
        # which is a no-op here: rebuild them
        model.set_index_buffers()
        return model


class BiLSTMCRFForTokenClassification(RNNTaggerPreTrainedModel):
    """The BiLSTM-CRF baseline; ``decode`` gives Viterbi tag ids per sentence."""

    config_class = BiLSTMCRFConfig
    base_model_prefix = "bilstm_crf"

    def __init__(self, config: BiLSTMCRFConfig):
        super().__init__(config)
        self.embed = WordNgramEmbedding(config) if config.char_encoder == "ngram" else WordCharEmbedding(config)
        self.encoder = StackedBiLSTM(self.embed.output_dim, config.hidden_size, config.num_layers, config.dropout)
        self.dropout = nn.Dropout(config.dropout if config.dropout_after_lstm else 0.0)
        self.classifier = nn.Linear(2 * config.hidden_size, config.num_labels)
        self.crf = CRF(config.num_labels)
        self.domain_classifier = None
        if config.domain_classifier_hidden:
            self.domain_classifier = nn.Sequential(nn.Linear(2 * config.hidden_size, config.domain_classifier_hidden),
                                                   nn.ReLU(), nn.Linear(config.domain_classifier_hidden, 2))
        self.post_init()

    def domain_logits(self, word_ids, char_ids, attention_mask, reversal: float) -> torch.Tensor:
        """Source (0) / target (1) logits of each sentence from its mean BiLSTM state, through a gradient reversal
        of strength ``reversal`` (DANN, Ganin et al. 2016): minimising their loss trains the classifier and pushes
        the encoder towards features the classifier cannot tell apart."""
        states = reverse_gradient(self.encoder(self.embed(word_ids, char_ids), attention_mask.sum(1)), reversal)
        mask = attention_mask.unsqueeze(-1).to(states.dtype)
        return self.domain_classifier((states * mask).sum(1) / mask.sum(1))

    def emissions(self, word_ids, char_ids, attention_mask) -> torch.Tensor:
        out = self.encoder(self.embed(word_ids, char_ids), attention_mask.sum(1))
        return self.classifier(self.dropout(out))

    def forward(self, word_ids, char_ids, attention_mask, labels=None, **kwargs) -> TaggerOutput:
        emissions = self.emissions(word_ids, char_ids, attention_mask)
        return tagger_output(self.crf, emissions, labels, attention_mask, self.config.loss_reduction)

    @torch.no_grad()
    def decode(self, word_ids, char_ids, attention_mask) -> list[list[int]]:
        return self.crf.decode(self.emissions(word_ids, char_ids, attention_mask), attention_mask.bool())
