"""The ``evaluate`` module of CrossNER's NER metric: load it with
``evaluate.load(crossner_hf.evaluation.metrics.EVALUATE_MODULE_PATH)``."""
