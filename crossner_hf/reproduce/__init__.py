"""``crossner-hf reproduce``: the papers' experiments as resumable grids of existing commands.

- :mod:`.grid`: a cell (one run of a ``crossner-hf`` command in its own folder), its status, running it, and
  running a grid on :mod:`crossner_hf.executors` (local, Ray and Slurm through submitit, with dependencies and
  resume: the one executor home, shared with the Wikipedia builders)
- :mod:`.experiments`: the experiments' cells at the ``smoke`` / ``cpu`` / ``paper`` scales
- :mod:`.papers`: the papers' tables as package data (``paper_tables.json``, each row with its source line)
- :mod:`.tables`: our numbers beside the papers', as Markdown and CSV
"""
