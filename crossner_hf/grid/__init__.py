"""The grid: typed runs (cells) of ``crossner-hf`` workflows, each in its own folder, run and resumed on the
executors of :mod:`crossner_hf.executors` (local processes packed on this machine's cores and GPUs, Ray, Slurm).

One grid serves every caller that runs many trainings: ``reproduce`` (the papers' experiments) and ``adapt`` (the
methods on a user's domain). It sits low in the layers (it imports only the base layer): a cell runs its workflow
as a process, never by importing a command.

- :mod:`.cells`: :class:`Cell`, its folder and status (:class:`Status`, whose home is
  :mod:`crossner_hf.executors`), the one table of ``crossner-hf`` commands, the dependency order, the status table,
  a cell's saved step and the seconds of its runs
- :mod:`.run`: running one cell (its process, log, markers, resume) and a whole grid under the folder's lock, the
  :class:`Controller` a raced search plugs in, :class:`GridRun` (one run's state)
- :mod:`.study`: the study shape ``reproduce`` and ``adapt`` share (the plan checked, the dry run, the status)
- :mod:`.costs`: what a cell costs; :mod:`.warm`: the warm interpreter CPU cells fork from
"""

from crossner_hf.grid.cells import (
    STATUSES,
    Cell,
    Status,
    cell_status,
    grid_status,
    progress_note,
    render_flags,
    run_seconds,
    status_table,
    stop_reason,
    topological,
)
from crossner_hf.grid.run import Controller, GridInterrupted, GridRun, grid_lock, grid_lock_if_free, run_cell, run_grid

__all__ = ["STATUSES", "Cell", "Controller", "GridInterrupted", "GridRun", "Status", "cell_status", "grid_lock",
           "grid_lock_if_free", "grid_status", "progress_note", "render_flags", "run_cell", "run_grid", "run_seconds",
           "status_table", "stop_reason", "topological"]
