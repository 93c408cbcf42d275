"""Layer 5, real public corpora and question sets, read from registry packages (no hub
downloads): `base` (the `Dataset` model, splits), `corpora`, `qa` (the loaders, HaluEval
pairs, your own folder) and `testset` / `testset_filters` (a test set the LLM generates from
your documents)."""
