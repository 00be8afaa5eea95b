"""``crossner-hf reproduce``: the papers' experiments as resumable grids of existing commands.

- :mod:`.grid`: a cell (one run of a ``crossner-hf`` command in its own folder), its status, running it
- :mod:`.experiments`: the experiments' cells at the ``smoke`` / ``cpu`` / ``paper`` scales
- :mod:`.executors`: local, Ray and Slurm (submitit) execution with dependencies and resume
- :mod:`.papers`: the papers' tables as package data (``paper_tables.json``, each row with its source line)
- :mod:`.tables`: our numbers beside the papers', as Markdown and CSV
"""
