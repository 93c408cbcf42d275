"""The agent evaluation's options, typed: `AgentEvalOptions` (what `run.evaluate` takes, what
`agentic-rag agent-eval` builds from its flags, what the claims' agent protocol builds in
code), the cell grammar (`parse_cell`) and the command line an options object stands for
(`command_line`, recorded in the run's meta files to reproduce it). Light on purpose: the CLI
reads its defaults from here without importing the evaluation."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields

from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_llm import ServerConfig

PROG = "agentic-rag agent-eval"
RUNS_DIR = "experiments/agent-runs"  # relative to the working directory (the repository root)
HOME = "experiments/cache/agent-eval"
DATASETS = ("python-faq", "tau2-banking")
# what `--datasets` takes: the defaults, and the banking product questions
# (datasets/banking-products/{dev,test}.jsonl over the τ²-banking documents, `tasks.load`)
KNOWN_DATASETS = (*DATASETS, "banking-products")
POLICIES = ("retrieve_first", "tool_required", "free", "closed_book")
GATES = ("gated", "static", "always_expand")
SPLITS = ("dev", "test", "all")
BANKING_QUESTIONS = ("scenario", "opening")
BASELINE = "closed_book:native"
CORPUS_SIZE = {"python-faq": 80, "tau2-banking": 250}
# `--repeats K` samples at this temperature unless `--temperature` or a --config's
# `llm.temperature` (> 0) says otherwise; repeat r sends the seed `REPEAT_SEED + r`
REPEAT_TEMPERATURE = 0.7
REPEAT_SEED = 1


@dataclass(frozen=True)
class AgentEvalOptions:
    """One invocation of the agent evaluation (the CLI flags are these names with dashes).

    `corpus_size`: dataset -> documents indexed (its sampled questions' gold documents plus
    seeded distractors); a dataset left out indexes its whole corpus. `config`: a config file
    whose `llm` section is used when it sets `llm.base_url` / `llm.endpoints`."""

    run: str
    runs_dir: str = RUNS_DIR
    datasets: tuple[str, ...] = DATASETS
    split: str = "test"
    n: int = 30
    seed: int = 0
    cells: tuple[str, ...] = ("retrieve_first:native", BASELINE)
    max_steps: int = AgentConfig().max_steps
    context_tokens: int = RAGConfig().context.max_tokens
    port: int = 8777
    threads: int = ServerConfig().n_threads
    home: str = HOME
    config: str | None = None
    corpus_size: Mapping[str, int] = field(default_factory=lambda: dict(CORPUS_SIZE))
    budget_min: float | None = None
    banking_question: str = "scenario"
    max_concurrency: int | None = None
    max_llm_calls: int | None = None
    no_judge: bool = False
    judge_only: bool = False
    summarize_only: bool = False
    compare: str | None = None
    repeats: int = 1
    temperature: float | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("split", SPLITS), ("banking_question", BANKING_QUESTIONS)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"--{name.replace('_', '-')} {getattr(self, name)!r}: use one "
                                 f"of {', '.join(allowed)}")
        unknown = [d for d in self.datasets if d not in KNOWN_DATASETS]
        if unknown:
            raise ValueError(f"--datasets {' '.join(unknown)}: use one or more of "
                             f"{', '.join(KNOWN_DATASETS)}")
        if self.repeats < 1:
            raise ValueError(f"--repeats {self.repeats}: use 1 (one greedy run) or more")
        if self.temperature is not None and not 0 < self.temperature <= 2:
            raise ValueError(f"--temperature {self.temperature}: repeats sample, use a "
                             "temperature in (0, 2]")
        if self.temperature is not None and self.repeats == 1:
            raise ValueError("--temperature is for --repeats K (K > 1): a single run is greedy")
        # lists from a caller become tuples: the options compare and print the same either way
        object.__setattr__(self, "datasets", tuple(self.datasets))
        object.__setattr__(self, "cells", tuple(self.cells))
        object.__setattr__(self, "corpus_size", dict(self.corpus_size))


DEFAULTS = AgentEvalOptions(run="")


def parse_cell(cell: str) -> tuple[str, str, str | None]:
    """`policy:mode[:gate]`; the gate is the retrieval tool's `gate.mode` (None: the
    config's default, `gated`), e.g. `retrieve_first:native:static` for the static tool."""
    parts = cell.split(":")
    if len(parts) not in (2, 3) or parts[0] not in POLICIES or parts[1] not in ("native", "json") \
            or (len(parts) == 3 and parts[2] not in GATES):
        raise ValueError(f"--cells: {cell!r} is not policy:mode[:gate] with policy in "
                         f"{POLICIES}, mode native|json, gate in {GATES}")
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def parse_corpus_size(values: Sequence[str]) -> dict[str, int]:
    """`["python-faq=80", ...]` -> `{"python-faq": 80}`; ValueError naming a bad value."""
    out = {}
    for v in values:
        name, eq, size = v.partition("=")
        if not eq or not name or not size.strip().isdigit():
            raise ValueError(f"--corpus-size {v!r}: use DATASET=N (e.g. python-faq=80)")
        out[name] = int(size)
    return out


def command_line(opts: AgentEvalOptions, prog: str = PROG) -> str:
    """The command that runs `opts`: `prog` and every option that differs from its default,
    in declaration order (`--run` always) — what the run's meta files record."""
    words = [prog]
    for f in fields(opts):
        value = getattr(opts, f.name)
        if f.name != "run" and value == getattr(DEFAULTS, f.name):
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(value, bool):
            words.append(flag)
        elif isinstance(value, Mapping):
            words += [flag, *(f"{k}={v}" for k, v in value.items())]
        elif isinstance(value, tuple):
            words += [flag, *map(str, value)]
        else:
            words += [flag, str(value)]
    return " ".join(words)
