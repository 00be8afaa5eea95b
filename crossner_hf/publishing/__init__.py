"""The publishing layer: what leaves the machine.

Modules: ``cards`` (model and dataset cards from the Jinja templates in ``model_cards``),
``dataset_folder`` (Parquet + card folders ``load_dataset`` opens), ``hub`` (pushing a folder to
the Hub with one-line failures). Atomic file outputs stay in ``crossner_hf.outputs``, below every
layer, since evaluation writes plots with them too. Imports ``data``, ``modeling``, ``evaluation``.
"""
