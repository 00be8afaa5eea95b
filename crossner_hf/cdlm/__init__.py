"""BiLSTM-CRF and the cross-domain language model (Jia, Liang & Zhang, ACL 2019) for CrossNER.

- :mod:`.crf`: batched linear-chain CRF (forward algorithm, Viterbi).
- :mod:`.vocab`: word/character vocabularies and GloVe-format vectors.
- :mod:`.modeling`: ``BiLSTMCRFForTokenClassification`` and ``CDLMForTokenClassification``
  (``transformers`` models; the CDLM's BiLSTM weights come from a parameter generation network).
- :mod:`.training`: the multi-stream training loop (supervised and zero-shot), evaluation.
"""

from .crf import CRF
from .modeling import (
    BiLSTMCRFConfig,
    BiLSTMCRFForTokenClassification,
    CDLMConfig,
    CDLMForTokenClassification,
    ParameterGenerator,
)
from .vocab import WordCharVocab, load_word_vectors

__all__ = ["CRF", "BiLSTMCRFConfig", "BiLSTMCRFForTokenClassification", "CDLMConfig", "CDLMForTokenClassification",
           "ParameterGenerator", "WordCharVocab", "load_word_vectors"]
