"""The LLM sections of the config tree: the chat endpoint (`LLMConfig`) and the embedded
llama.cpp server (`ServerConfig`). Re-exported by `agentic_rag.config`."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pydantic import Field, model_validator

from agentic_rag.config_base import _Section


def _checkout() -> Path:
    """This checkout's root: the nearest folder above this file holding pyproject.toml."""
    here = Path(__file__).resolve()
    return next((p for p in here.parents if (p / "pyproject.toml").is_file()), here.parents[1])


# where `make install` builds llama.cpp's C++ server (Makefile: LLAMA_SERVER)
LLAMA_SERVER_BUILD = _checkout() / ".venv/llama-server/build/bin/llama-server"
LLAMA_SERVER_ENV = "AGENTIC_RAG_LLAMA_SERVER"


def default_llama_server() -> str | None:
    """`llm.server.binary`'s default: $AGENTIC_RAG_LLAMA_SERVER when set (empty or `none`:
    llama-cpp-python's portable server), else the llama-server `make install` built in this
    checkout (`LLAMA_SERVER_BUILD`) when it is there, else None (llama-cpp-python's server:
    `LlamaServer.start` says in one line why and what it costs)."""
    env = os.environ.get(LLAMA_SERVER_ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "none", "null", "portable") else env
    return str(LLAMA_SERVER_BUILD) if os.access(LLAMA_SERVER_BUILD, os.X_OK) else None


class ServerConfig(_Section):
    """The embedded local LLM: llama.cpp's OpenAI-compatible server on 127.0.0.1."""

    model: str = Field("qwen2.5-coder-1.5b", description="a name from agentic_rag.llm.models.MODELS "
                       "or a path to a .gguf file")
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1024, le=65535)
    n_ctx: int = Field(8192, ge=512, le=131072)
    n_threads: int = Field(2, ge=1, le=256)
    chat_format: str | None = Field(None, description="None = the GGUF's own chat template")
    startup_timeout_s: float = Field(180.0, gt=0)
    binary: str | None = Field(
        default_factory=default_llama_server, description="a llama.cpp `llama-server` "
        "executable to run instead of llama-cpp-python's server (None): top_logprobs without "
        "computing every position's logits, parallel slots. Default: the one `make install` "
        "builds, when built ($AGENTIC_RAG_LLAMA_SERVER overrides; `none`: llama-cpp-python)")
    slots: int = Field(1, ge=1, le=64, description="sequences decoded at once (llama-server "
                       "only; each gets n_ctx tokens; llama-cpp-python's server has one)")
    cpu_variant: str | None = Field(
        None, description="the ggml CPU variant a llama-server built with run-time variants "
        "runs (`zen4`, `icelake`, `haswell`, ...): None = ggml's best for this processor that "
        "answers a test completion (the next built one down when it dies). Pin "
        "one where ggml's pick faults (unpatched AMX) or to share replies "
        "between machines that run the same variant")
    repack: bool | None = Field(
        None, description="ggml's repacked weight layouts (llama-server's extra buffer types: "
        "CPU_REPACK, and AMX in `sapphirerapids`): None = off for the variants whose plain "
        "kernels read prompts faster (`zen4`, `icelake`: 1.3-1.5x measured), on for the others. "
        "Replies are cached per setting: `true` replays zen4 reply packs made before 2026-12-06")

    @model_validator(mode="after")
    def _slots_need_llama_server(self) -> ServerConfig:
        if self.slots > 1 and self.binary is None:
            raise ValueError(f"llm.server.slots = {self.slots} needs llm.server.binary (a "
                             "llama.cpp llama-server): llama-cpp-python's server has one slot")
        if self.cpu_variant is not None and self.binary is None:
            raise ValueError(f"llm.server.cpu_variant = {self.cpu_variant!r} needs "
                             "llm.server.binary (a llama-server built with `make llama-server`)")
        if self.repack is not None and self.binary is None:
            raise ValueError(f"llm.server.repack = {self.repack} needs llm.server.binary (a "
                             "llama-server): llama-cpp-python's server has no such switch")
        if self.cpu_variant is not None and not re.fullmatch(r"\w[\w.-]*", self.cpu_variant):
            raise ValueError(f"llm.server.cpu_variant = {self.cpu_variant!r}: not a variant "
                             "name (e.g. zen4, icelake, haswell)")
        return self


class LLMConfig(_Section):
    """Any OpenAI-compatible chat endpoint; `base_url=None` means the embedded local server."""

    base_url: str | None = None
    model: str = "local"
    api_key_env: str = Field("OPENAI_API_KEY", description="NAME of the env var holding the key")
    timeout_s: float = Field(300.0, gt=0)
    max_retries: int = Field(3, ge=0, le=20)
    max_concurrency: int = Field(1, ge=1, le=256, description="LLM calls in flight at once "
                                 "(1 for a single-slot local server; the server's slots; "
                                 "8-16 for hosted APIs)")
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int | None = Field(None, description="the sampling seed sent with every call (None: "
                             "none sent); part of the reply cache's key, so each seed's "
                             "replies are cached apart (agent-eval --repeats)")
    max_tokens: int = Field(512, ge=1, le=32768)
    cache: bool = Field(True, description="cache replies on disk keyed by model, messages, params")
    server: ServerConfig = ServerConfig()
    endpoints: tuple[str, ...] | None = Field(
        None, description="a pool of OpenAI-compatible base URLs (http(s)://host:port/v1) all "
        "serving `model` (its name is the reply cache's key: put the version in it): calls are "
        "spread across them, up to max_concurrency each; a dead one is left out and its calls "
        "go to the others (llm_endpoints.py). Instead of base_url, not with it")

    @model_validator(mode="after")
    def _endpoints_or_base_url(self) -> LLMConfig:
        from urllib.parse import urlparse

        if self.endpoints is None:
            return self
        if not self.endpoints:
            raise ValueError("endpoints: empty list; leave it unset for one endpoint "
                             "(base_url, or the local server)")
        if self.base_url is not None:
            raise ValueError(f"base_url ({self.base_url!r}) and endpoints are both set: set "
                             "one, base_url for one endpoint or endpoints for a pool")
        for i, url in enumerate(self.endpoints):
            u = urlparse(url)
            try:
                u.port  # noqa: B018 - raises on a port out of range
            except ValueError:
                u = u._replace(netloc="")
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(f"endpoints[{i}]: {url!r} is not an http(s)://host:port/v1 URL")
        if len(set(self.endpoints)) < len(self.endpoints):
            raise ValueError(f"endpoints: {list(self.endpoints)} lists an endpoint twice")
        return self

    @property
    def slots(self) -> int:
        """LLM calls in flight at once: `max_concurrency` per endpoint."""
        return self.max_concurrency * len(self.endpoints or ("one",))

    @property
    def uses_local_server(self) -> bool:
        """Whether calls go to the embedded llama.cpp server (neither `base_url` nor
        `endpoints` set): the one rule every command follows to decide whether to start it
        (`server.serve_local`); otherwise the endpoints are called and nothing is started."""
        return self.base_url is None and not self.endpoints
