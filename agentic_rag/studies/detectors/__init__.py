"""Validating the hallucination detectors on labelled answers: scoring answers with every
detector, resumably (`scoring`), HaluEval's right vs hallucinated answers (`run`), the local
model's own labelled answers (`own`), ragas faithfulness on a subsample (`ragas`) and the
statistics (`stats`)."""
