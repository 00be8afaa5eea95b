"""``crossner-hf reproduce``: the papers' experiments as resumable grids of existing commands.

- the cells and running them: :mod:`crossner_hf.grid` (shared with ``adapt``)
- :mod:`.experiments`: the experiments' cells at the ``smoke`` / ``cpu`` / ``paper`` scales
- :mod:`.papers`: the papers' tables as package data (``paper_tables.json``, each row with its source line)
- :mod:`.tables`: our numbers beside the papers', as Markdown and CSV
"""
