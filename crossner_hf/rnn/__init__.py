"""The RNN taggers: the BiLSTM-CRF baseline and the cross-domain language model (CDLM).

- :mod:`.bilstm_crf`: ``BiLSTMCRFForTokenClassification`` in two architectures (``lample``:
  Lample et al. 2016 / NCRF++; ``crossner``: the CrossNER paper's baseline).
- :mod:`.cdlm`: ``CDLMForTokenClassification`` (Jia, Liang & Zhang, ACL 2019): the BiLSTM's
  weights come from a parameter generation network per (domain, task).
- :mod:`.layers`: word representations, the padded (stacked) BiLSTM, the CRF loss.
- :mod:`.sampled_softmax`: the LM's sampled softmax with distinct log-uniform negatives.
- :mod:`.crf`: batched linear-chain CRF (forward algorithm, Viterbi).
- :mod:`.vocab`: word/character vocabularies, GloVe-format and character n-gram vectors.
- :mod:`.training`: the multi-stream training loop (supervised and zero-shot), evaluation.
- :mod:`.recipes`: the two recipes (``crossner-hf bilstm-crf``, ``crossner-hf cdlm``) and their arguments.
"""

from .bilstm_crf import ARCHITECTURES, BiLSTMCRFConfig, BiLSTMCRFForTokenClassification
from .cdlm import CDLMConfig, CDLMForTokenClassification, ParameterGenerator
from .crf import CRF
from .vocab import WordCharVocab, load_char_ngram_vectors, load_word_vectors

__all__ = ["ARCHITECTURES", "CRF", "BiLSTMCRFConfig", "BiLSTMCRFForTokenClassification", "CDLMConfig",
           "CDLMForTokenClassification", "ParameterGenerator", "WordCharVocab", "load_char_ngram_vectors",
           "load_word_vectors"]
