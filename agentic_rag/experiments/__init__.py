"""Layer 9, the experiment machinery: a sweep `spec`, its `plan` (units of work, one per index),
the `executors` (this process, or Ray), `measure` (one config × query → one measured row),
`row_cache`, `summary` and `stats` (paired bootstrap CIs, Pareto
front), `runfolder`, `runner.run_sweep` (the driver), `export` (the chosen config with its
provenance), `replay` (the interactive tuner), `plots` and `llm_cost` (estimates and the
meter's progress). Studies (`agentic_rag.studies`) are built on it."""
