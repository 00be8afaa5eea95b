"""The executor flags of the commands that run a grid (``reproduce``, ``adapt``): declared once here.

The fields are keyword-only so that a command's own fields without defaults (``reproduce``'s positional
experiment) may come first; :meth:`ExecutorArguments.executor_options` turns them into the
:class:`~crossner_hf.executors.ExecutorOptions` the grid runs on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crossner_hf.executors import ExecutorOptions


@dataclass(kw_only=True)
class ExecutorArguments:
    """Where a grid's cells run: here one after another, as Ray tasks, or as Slurm jobs."""

    executor: str = field(default="local", metadata={
        "help": "local (cells packed on this machine, --workers at once), ray (Ray tasks; RAY_ADDRESS joins a "
                "cluster), slurm (submitit jobs).",
        "choices": ["local", "ray", "slurm"]})
    ray_address: str | None = field(default=None, metadata={"help": "Ray cluster to join (default: RAY_ADDRESS)."})
    slurm_partition: str | None = field(default=None, metadata={"help": "Slurm partition of the cells' jobs."})
    slurm_account: str | None = field(default=None, metadata={"help": "Slurm account of the cells' jobs."})
    slurm_cluster: str | None = field(default=None, metadata={
        "help": "submitit cluster (default: Slurm when sbatch is present; 'local' runs the Slurm path here).",
        "choices": ["slurm", "local", "debug"]})

    workers: int = field(default=-1, metadata={
        "help": "Cells at the same time (local: on this machine; -1 fills it: every GPU slot for GPU cells, one "
                "cell a core otherwise)."})
    cells_per_gpu: int = field(default=1, metadata={
        "help": "Cells sharing one GPU (local: CUDA_VISIBLE_DEVICES slots; Ray: 1/K of a GPU each). A cell that "
                "runs out of GPU memory beside others runs again alone."})
    threads_per_cell: int | None = field(default=None, metadata={
        "help": "CPU threads of each cell (default: this machine's cores / the cells running at once)."})
    cells_per_job: int = field(default=1, metadata={
        "help": "Slurm: cells packed into one job, run there side by side as --workers and --cells_per_gpu say."})
    keep_checkpoints: bool = field(default=False, metadata={
        "help": "Keep a finished cell's checkpoints (default: removed, one copy of its model is kept)."})

    def executor_options(self) -> ExecutorOptions:
        """The flags as the grid's :class:`~crossner_hf.executors.ExecutorOptions`."""
        from crossner_hf.executors import ExecutorOptions

        return ExecutorOptions(executor=self.executor, ray_address=self.ray_address,
                               slurm_partition=self.slurm_partition, slurm_cluster=self.slurm_cluster,
                               slurm_account=self.slurm_account, workers=self.workers,
                               cells_per_gpu=self.cells_per_gpu, threads_per_cell=self.threads_per_cell,
                               cells_per_job=self.cells_per_job, keep_checkpoints=self.keep_checkpoints)
