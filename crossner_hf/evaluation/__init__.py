"""The evaluation layer: scores, confusion and reports.

Modules: ``metrics`` (CrossNER's conlleval-convention F1, per type), ``seqeval_metric`` (the
same metric as an ``evaluate`` module), ``hierarchy`` (type hierarchy, entity-level
confusion), ``entity_analysis`` (predicted entities against gold, for plots), ``plots``,
``report`` (the HTML report). Imports ``data``, ``modeling``, ``inference``.
"""
