"""Layer 4, metrics only: retrieval (ir-measures, document and span level), answers (EM, token F1,
abstention), containment of the answer in the context, support detectors and the LLM judge,
ragas, and how well a score detects a label (AUROC). A new metric goes in the module of its
kind here."""
