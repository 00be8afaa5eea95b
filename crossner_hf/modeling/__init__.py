"""The modeling layer: the decoding and provenance a model carries, and the RNN models.

Modules: ``decoding`` (BIO repair and Viterbi over BIO constraints), ``heads`` (token-classification heads and the provenance a model carries),
``rnn`` (BiLSTM-CRF, CDLM, Coach: configs and models, registered with the Auto classes).
Imports only ``data``. Each name is imported from its module
(``from crossner_hf.modeling.heads import read_provenance``); the package itself names nothing."""
