"""The RNN taggers: the BiLSTM-CRF baseline and the cross-domain language model (CDLM).

- :mod:`.bilstm_crf`: ``BiLSTMCRFForTokenClassification`` in two architectures (``lample``:
  Lample et al. 2016 / NCRF++; ``crossner``: the CrossNER paper's baseline).
- :mod:`.cdlm`: ``CDLMForTokenClassification`` (Jia, Liang & Zhang, ACL 2019): the BiLSTM's
  weights come from a parameter generation network per (domain, task).
- :mod:`.coach`: ``CoachForTokenClassification`` (Liu et al., ACL 2020, as CrossNER ran it): type-free
  O/B/I detection, then each span typed against fixed type vectors.
- :mod:`.multicell`: ``MultiCellForTokenClassification`` (Jia & Zhang, ACL 2020): one LSTM cell per entity
  type, a compositional cell attending over them, source and target CRFs, optional encoder features.
- :mod:`.layers`: word representations, the padded (stacked) BiLSTM, the CRF loss.
- :mod:`.sampled_softmax`: the LM's sampled softmax with distinct log-uniform negatives.
- :mod:`.crf`: batched linear-chain CRF (forward algorithm, Viterbi).
- :mod:`.vocab`: word/character vocabularies, GloVe-format and character n-gram vectors.
- training and prediction live above this layer: :mod:`crossner_hf.training.rnn` (loop, recipes),
  :mod:`crossner_hf.inference.rnn_tagger` (tagging a saved folder).
"""

from crossner_hf.modeling.rnn.bilstm_crf import ARCHITECTURES, BiLSTMCRFConfig, BiLSTMCRFForTokenClassification
from crossner_hf.modeling.rnn.cdlm import CDLMConfig, CDLMForTokenClassification, ParameterGenerator
from crossner_hf.modeling.rnn.coach import CoachConfig, CoachForTokenClassification
from crossner_hf.modeling.rnn.crf import CRF
from crossner_hf.modeling.rnn.multicell import MultiCellConfig, MultiCellForTokenClassification
from crossner_hf.modeling.rnn.vocab import WordCharVocab, load_char_ngram_vectors, load_word_vectors


def _register_auto_classes() -> None:
    """``AutoConfig`` / ``AutoModelForTokenClassification`` load a saved BiLSTM-CRF or CDLM folder once
    ``crossner_hf.modeling.rnn`` is imported, as they load any transformers model (the word vocabulary is beside it:
    :class:`WordCharVocab`, and :mod:`.predict` tags with both)."""
    from transformers import AutoConfig, AutoModelForTokenClassification

    for config, model in ((BiLSTMCRFConfig, BiLSTMCRFForTokenClassification), (CDLMConfig, CDLMForTokenClassification),
                          (CoachConfig, CoachForTokenClassification),
                          (MultiCellConfig, MultiCellForTokenClassification)):
        AutoConfig.register(config.model_type, config, exist_ok=True)
        AutoModelForTokenClassification.register(config, model, exist_ok=True)


_register_auto_classes()

__all__ = ["ARCHITECTURES", "CRF", "BiLSTMCRFConfig", "BiLSTMCRFForTokenClassification", "CDLMConfig",
           "CoachConfig", "CoachForTokenClassification", "MultiCellConfig", "MultiCellForTokenClassification",
           "CDLMForTokenClassification", "ParameterGenerator", "WordCharVocab", "load_char_ngram_vectors",
           "load_word_vectors"]
