"""The paper presets (``--config paper/NAME``); every value is checked against docs/fidelity.md."""
