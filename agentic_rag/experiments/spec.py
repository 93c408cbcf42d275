"""A sweep spec: dataset + sample, a base `RAGConfig`, a grid and/or random search over
dotted parameter paths and/or explicit variants, metric groups, repeats and the baseline.
Validated like the config: unknown keys and bad parameter paths are errors naming the file
and field."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentic_rag.config import RAGConfig, format_validation_error
from agentic_rag.config_base import ConfigError

MetricGroup = Literal["retrieval", "answers", "hallucination", "ragas", "ragas_nonllm", "agent"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class DatasetSpec(_Strict):
    name: str = "halueval-qa"
    split: Literal["dev", "test", "all"] = "dev"
    n: int | None = Field(100, ge=1, description="queries sampled; None = all")
    seed: int = 0
    corpus_size: int | None = Field(None, ge=1, description="gold docs + seeded distractors")
    docs: str | None = Field(None, description="name=local: folder of documents")
    questions: str | None = Field(
        None, description="name=local: JSONL/CSV of questions; with a packaged dataset: "
        "questions (e.g. a generated set, `agentic-rag testset`) that replace its own, all of "
        "them, over the corpus that split / n / seed / corpus_size select (their gold must "
        "be in it): human and generated questions compared on one corpus")
    exclude: list[str] = Field(
        default_factory=list, description="document-id prefixes taken out of the corpus "
        "(e.g. 'pydocs/faq/'); questions whose gold is all taken out go too")
    knowable: bool = Field(True, description="keep generated questions the model answered "
                           "without context")
    unanswerable: bool = Field(True, description="keep generated questions with no answer in "
                               "the corpus (no gold: retrieval metrics skip them)")


class RandomSearch(_Strict):
    n: int = Field(..., ge=1)
    seed: int = 0
    params: dict[str, list[Any]]


class RaySpec(_Strict):
    """Where and how a sweep with `executor: ray` runs (`executors.RayExecutor`)."""

    address: str | None = Field(
        None, description="a running cluster (host:port, ray://host:port, auto); None: "
        "RAY_ADDRESS, else a cluster running on this machine, else a local one is started")
    workers: int | None = Field(None, ge=1, description="actors; default one per cluster CPU")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a local cluster the sweep "
                                 "starts; default all of this machine's")
    connect_timeout_s: float = Field(10.0, gt=0, description="an unreachable address fails "
                                     "after this, naming it")
    shards_per_worker: int = Field(4, ge=1, description="query shards per worker (more: finer "
                                   "balance and less lost when a worker dies; fewer: less "
                                   "overhead)")
    start_timeout_s: float = Field(300.0, gt=0, description="a worker not running within "
                                   "this (placed on a node, its model loaded) is given up: "
                                   "at the start, an error naming the counts; after a worker "
                                   "died (its node gone, say), the sweep goes on without it")


class SweepSpec(_Strict):
    name: str = Field(..., min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    dataset: DatasetSpec = DatasetSpec()
    base: RAGConfig = RAGConfig()
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    random: RandomSearch | None = None
    variants: list[dict[str, Any]] = Field(
        default_factory=list, description="explicit override sets, one config each, after the "
        "grid's and the random ones: settings that go together (a strategy and its chunk "
        "size); {} is the base config")
    metrics: list[MetricGroup] = Field(default_factory=lambda: ["retrieval"])
    k: int = Field(10, ge=1, le=100, description="hits evaluated per query")
    repeats: int = Field(1, ge=1, le=20, description="repeat each config (latency variance)")
    baseline: dict[str, Any] | None = Field(
        None, description="overrides that identify the baseline config; default: the first")
    replay: bool = Field(True, description="configs sharing an index share one memo of "
                         "candidate lists (fusion / gate / filter settings cost no new search; "
                         "latency is charged the first search's time)")
    llm_sample: int = Field(20, ge=0, description="queries per config that get LLM metrics")
    reply_pack: str | None = Field(
        None, description="a JSON-lines file of LLM replies kept with the repository "
        "(`llm.ChatCache`): read when the reply cache misses, appended with every new reply, "
        "so a long LLM run resumes on a fresh machine; changes no result")
    executor: Literal["local", "ray"] = Field(
        "local", description="local: this process; ray: a Ray cluster (`ray` section). The "
        "rows are the same; not part of the spec hash, so either resumes the other's run")
    ray: RaySpec = RaySpec()
    hallucination_labels: list[str] = Field(
        default_factory=list, description="folders of labelled answers (`answers.jsonl` + "
        "`labels-pass1.jsonl`, as the notebook's labelling view writes them; e.g. "
        "experiments/detectors/halueval-own): a config whose rows match labelled answers (the "
        "same question id and answer text: the same model and settings) gets its hallucination "
        "rate by prediction-powered inference, `hallucinated_ppi` with a CI that carries the "
        "detector's error (experiments/labels.py)")
    ragas_metrics: list[Literal["faithfulness", "factual_correctness", "context_precision",
                                "context_recall"]] = Field(
        default_factory=lambda: ["faithfulness", "factual_correctness", "context_precision",
                                 "context_recall"])

    @model_validator(mode="after")
    def _check_paths(self) -> SweepSpec:
        for label, overrides in self.configs_overrides():
            try:
                self.base.with_overrides(overrides)
            except ConfigError as exc:
                raise ValueError(f"config {label}: {exc}") from None
        return self

    def configs_overrides(self) -> list[tuple[str, dict[str, Any]]]:
        combos: list[dict[str, Any]] = []
        if self.grid:
            keys = list(self.grid)
            combos += [dict(zip(keys, vals)) for vals in itertools.product(*self.grid.values())]
        if self.random:
            rng = random.Random(self.random.seed)
            keys = list(self.random.params)
            for _ in range(self.random.n):
                combos.append({k: rng.choice(self.random.params[k]) for k in keys})
        combos += [dict(v) for v in self.variants]
        if not combos:
            combos = [{}]
        seen, out = set(), []
        for c in combos:
            key = json.dumps(c, sort_keys=True)
            if key not in seen:
                seen.add(key)
                label = ",".join(f"{k}={v}" for k, v in c.items()) or "base"
                out.append((label, c))
        return out

    def configs(self) -> list[tuple[str, dict[str, Any], RAGConfig]]:
        return [(label, o, self.base.with_overrides(o)) for label, o in self.configs_overrides()]

    def with_executor(self, executor: str | None = None,
                      ray_address: str | None = None) -> SweepSpec:
        """This spec run by `executor` (local | ray) and, with ray, on `ray_address` (the
        `sweep` command's --executor / --ray-address); None keeps the spec's own."""
        if executor not in (None, "local", "ray"):
            raise ConfigError(f"--executor: {executor!r} is not one of local, ray")
        if ray_address is not None and (executor or self.executor) != "ray":
            raise ConfigError("--ray-address needs --executor ray (or `executor: ray` in the "
                              "spec)")
        update: dict[str, Any] = {"executor": executor or self.executor}
        if ray_address is not None:
            update["ray"] = self.ray.model_copy(update={"address": ray_address})
        return self.model_copy(update=update)

    def spec_hash(self) -> str:
        # how the rows are computed is not what is run: the executor stays out of the hash,
        # and so do the labels (they change the summary, not a row: `cached_summary`)
        blob = json.dumps(self.model_dump(mode="json", exclude={"executor", "ray",
                                                                 "hallucination_labels"}),
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]

    @classmethod
    def load(cls, path: str | Path) -> SweepSpec:
        path = Path(path)
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ConfigError(f"{path}: sweep spec not found") from None
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML: {exc}") from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, str(path))) from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False))
