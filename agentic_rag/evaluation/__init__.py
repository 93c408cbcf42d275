"""Layer 4, metrics only: retrieval (ir-measures, document and span level), answers (EM, token F1,
abstention), containment of the answer in the context, support detectors and the LLM judge,
ragas, and how well a score detects a label (AUROC). `metrics` declares each metric a sweep
summarises (`METRICS`): a new metric is its function in the module of its kind here and one
declaration there (or `register_metric`)."""
