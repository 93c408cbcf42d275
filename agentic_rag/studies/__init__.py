"""Layer 10, studies built on the experiment machinery: the claims ledger (`claims/`), the
hallucination detectors' validation (`detectors/`), the agent evaluation (`agent_eval/`),
retrieval strategies, generated test sets' validation, abstention, cold start, the gate's
calibration and answer-containment agreement. A new claim goes in `claims/registry.py`, a new
strategy in `strategies.py`."""
