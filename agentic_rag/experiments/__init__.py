"""The experiment runner: sweep specs → tidy per-query results, summaries, statistics, export."""

from .export import choose_config, export_config
from .runner import SweepResult, run_sweep
from .spec import DatasetSpec, SweepSpec
from .stats import bootstrap_ci, paired_bootstrap, pareto_front

__all__ = ["DatasetSpec", "SweepResult", "SweepSpec", "bootstrap_ci", "choose_config",
           "export_config", "paired_bootstrap", "pareto_front", "run_sweep"]
