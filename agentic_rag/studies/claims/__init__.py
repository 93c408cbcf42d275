"""The claims ledger: one protocol per design claim, turned into `experiments/claims/REPORT.md`
and `claims.json` with a verdict per claim and deployment.

A protocol names a baseline arm and a treatment arm, the metric the claim is about and the
direction the design claims (`registry.py`: `Claim`, `CLAIMS`). Retrieval and LLM protocols
are ordinary sweeps (config overrides, `runner.run_sweep`); the tiers protocol is a
fresh-process benchmark (`coldstart.run_cold_start`); the agent protocol runs the agent
evaluation (`agent_eval.run.evaluate`, in this process) and turns its paired rows into a run folder
(`agent_run_folder`) — all in `protocols.py`. Either way a run folder holds `summary.csv`
in the runner's format, and the measured effect is the paired relative change treatment vs
baseline over the same queries (for the tiers protocol: the same repetitions) with its 95 %
bootstrap CI (`ledger.py`). The verdict rule is code (`verdict`):

- the CI lies entirely on the side opposite to the claim → **contradicted**;
- the design states a figure (`registry.FIGURES`: a range with where the design measured it)
  and the whole CI is short of it → **smaller than claimed**, beyond it → **larger than
  claimed**;
- the CI contains 0 → **inconclusive**;
- otherwise (it excludes 0 and overlaps the stated range) → **confirmed**.

A protocol that was not run on a deployment gets a row that says so and why (`not run`,
`not run (smoke)`, `not applicable`), with no numbers. `run_claims(only=...)` reruns the
selected claims and keeps the other claims' rows from the existing `claims.json` (each
row names its own run folder and commit). Every number in the report is read from a run
folder; the report (`report.py`) names the run folders, whether each is committed, config
hashes, commits, date, machine and models.
"""
