"""The presets shipped with crossner_hf as package data ``crossner_hf.presets`` (``--config NAME`` finds them by name)."""
