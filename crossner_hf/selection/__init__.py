"""Which method for my domain? ``adapt`` runs the papers' methods on a user's labeled data (and raw text),
chooses on mean dev F1 over seeds and ships the choice with its evidence; ``compare`` builds the same table from
finished runs. The runner is :func:`~crossner_hf.selection.run.adapt`, its settings :class:`AdaptConfig`."""

from crossner_hf.selection.config import AdaptConfig
from crossner_hf.selection.run import AdaptResult, adapt, compare
from crossner_hf.selection.status import dry_run

__all__ = ["AdaptConfig", "AdaptResult", "adapt", "compare", "dry_run"]
