"""Training the RNN models (BiLSTM-CRF, CDLM, Coach): ``loop`` (one resumable Accelerate loop)
and ``recipes`` (the papers' settings per architecture, data, cards).
"""
