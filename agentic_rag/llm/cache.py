"""What an LLM reply is keyed on and where it is kept: `model_identity` (the model, not the
URL), `_cache_key` (identity + messages + parameters) and `ChatCache` (SQLite, plus the
committed reply pack a long run travels with)."""

from __future__ import annotations

import functools
import hashlib
import json
import threading
from collections.abc import Callable
from pathlib import Path

from agentic_rag.config_llm import LLMConfig
from agentic_rag.jsonl import JsonlError, append_rows, read_appended
from agentic_rag.llm.types import ChatReply
from agentic_rag.store.sqlite_kv import SQLiteFile

# a call's own figures, not the reply's: neither stored nor replayed (a cached reply
# evaluated nothing), so the stored rows and reply packs are what they were before them
PER_CALL = frozenset({"prompt_evaluated", "prompt_reused"})


def model_identity(config: LLMConfig, base_url: str | None = None,
                   digest: Callable[[Path], str] | None = None,
                   build: Callable[[], str] | None = None) -> str:
    """What the reply cache, the row cache and `meta.json` key LLM replies on: the model, not
    the URL.

    - the embedded local server (`llm.base_url` unset, called at its configured address):
      the GGUF weights' sha256 (a named model's is the one its server verifies at start; a
      .gguf path is hashed, by `digest` when given), the llama.cpp build and the CPU variant
      it runs (`llama_build`, or `build` when given: a variant's kernels round differently,
      so its greedy answers can differ; `+no-repack` when a llama-server runs ggml's plain
      kernels, `binary.repacks`) and the server settings that can change a reply
      (context size, chat format, threads); for a llama-server, the fastest path's converted
      weights (`<model>:<format>@<sha256>`) and batch sizes when they are not today's
      (`fast_path.weights_identity` / `settings_identity`);
    - a hosted endpoint (`llm.base_url` set, called there) or any endpoint of a pool
      (`llm.endpoints`): `llm.model`, the model name the endpoint serves (put the version
      in it, e.g. `gpt-4o-2024-08-06`), so a reply is found whichever endpoint made it;
    - any other address (a server started elsewhere, on another port): the alias and URL,
      since what it serves cannot be known; its replies are never shared with another's.
    A cached reply is then found whichever process or port of the same model made it."""
    s = config.server
    embedded = f"http://{s.host}:{s.port}/v1"
    if config.endpoints and base_url in (None, *config.endpoints):  # a pool: any member
        return f"remote:{config.model}"
    if config.base_url is None and base_url in (None, embedded):
        from agentic_rag.llm.models import MODELS

        if s.model in MODELS:
            weights = f"{s.model}@{MODELS[s.model].sha256}"
        else:
            p = Path(s.model)
            weights = f"gguf:{(digest or _file_sha256)(p)}" if p.is_file() else f"missing:{p}"
        if s.binary:  # llama-server: its build, and its slots (batched sequences can differ)
            from agentic_rag.llm.binary import served_binary, served_repacks
            from agentic_rag.llm.fast_path import settings_identity, weights_identity

            # the processor's fastest path (fast_path): converted weights, other batch sizes
            weights = weights_identity(s) or weights
            built = (build or (lambda: llama_build(served_binary(s))))()
            if not served_repacks(s):  # plain kernels round differently
                built += "+no-repack"
            return (f"{weights}|build={built}"
                    f"|n_ctx={s.n_ctx}|chat_format={s.chat_format}|n_threads={s.n_threads}"
                    f"|slots={s.slots}{settings_identity(s)}")
        return (f"{weights}|build={(build or llama_build)()}|n_ctx={s.n_ctx}"
                f"|chat_format={s.chat_format}|n_threads={s.n_threads}")
    if config.base_url is not None and base_url in (None, config.base_url):
        return f"remote:{config.model}"
    return f"{config.model}@{base_url}"


@functools.lru_cache(maxsize=4)
def llama_build(binary: str | None = None) -> str:
    """This interpreter's llama.cpp build as the reply cache keys it: llama-cpp-python's and
    ggml's versions and the CPU backend that runs (the runtime-chosen variant, e.g. `zen4`, or
    the features of a linked-in build). Asked once per process (`server.llama_build_info`);
    `unknown` when llama-cpp-python is not installed or cannot say. With `binary`, that
    llama-server's version and CPU variant (`binary.server_binary_info`); a binary that cannot
    say is an error, not `unknown` (its replies would be keyed as any other's)."""
    from agentic_rag.llm.binary import ServerError, server_binary_info
    from agentic_rag.llm.server import llama_build_info

    if binary:
        b = server_binary_info(binary)
        return f"llama-server {b['version']}/{b['cpu_variant'] or 'linked'}"
    try:
        info = llama_build_info()
    except (ServerError, ValueError, KeyError, IndexError):
        return "unknown"
    cpu = info.get("cpu_variant") or "linked:" + ",".join(
        sorted(k for k, v in (info.get("cpu_features") or {}).items() if str(v) == "1"))
    return (f"llama-cpp-python {info.get('llama_cpp_python')}/ggml {info.get('ggml_version')} "
            f"{info.get('ggml_commit')}/{cpu}")


def _file_sha256(path: Path) -> str:
    st = path.stat()
    return _sha256_cached(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    """A file's sha256, remembered per (path, size, mtime) for this process."""
    from agentic_rag.packages import file_sha256

    return file_sha256(Path(path))


def _cache_key(model_id: str, messages: list, params: dict) -> str:
    blob = json.dumps({"model": model_id, "messages": messages, "params": params},
                      sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


class ChatCache:
    """Replies by `_cache_key`, in one SQLite file (`store.sqlite_kv.SQLiteFile`).

    `pack`: a JSON-lines file of replies that travels with the repository (one
    `{"key", "reply"}` object per line). A reply missing from SQLite is looked up there, and
    every new reply is appended to it, so a long LLM run (the answer-level claims) resumes
    on a fresh machine from the committed pack instead of asking the model again. The key
    carries the model's identity, so a pack made by another model is never read as ours."""

    def __init__(self, path: str | Path, pack: str | Path | None = None) -> None:
        self.path = Path(path)
        # `speed`: each computed reply's tokens and seconds under the model identity that made
        # it, so a cost estimate measures the model about to run, not whichever ran last
        self._file = SQLiteFile(self.path, ["chat (key TEXT PRIMARY KEY, reply TEXT)",
                                            "speed (model TEXT, prompt_tokens INTEGER, "
                                            "completion_tokens INTEGER, latency_s REAL)"])
        self.pack = Path(pack) if pack is not None else None
        self._packed: dict[str, str] | None = None
        self._pack_lock = threading.Lock()

    def _pack(self) -> dict[str, str]:
        """The pack's replies by key, read once (under the lock: threads share the cache)."""
        with self._pack_lock:
            if self._packed is None:
                packed = {}
                try:  # a torn last line (a run killed mid-append) is cut off before we append
                    entries = read_appended(self.pack) if self.pack is not None else []
                except JsonlError as exc:
                    raise JsonlError(f"{self.pack}: line {exc.line} is not a reply-pack entry "
                                     f"({{\"key\", \"reply\"}}): {exc.reason}") from None
                for n, entry in entries:
                    try:
                        packed[entry["key"]] = json.dumps(entry["reply"])
                    except KeyError as exc:
                        raise JsonlError(f"{self.pack}: line {n} is not a reply-pack entry "
                                         f"({{\"key\", \"reply\"}}): {exc!r} missing") from exc
                self._packed = packed
            return self._packed

    def get(self, key: str) -> ChatReply | None:
        with self._file.connect() as db:
            row = db.execute("SELECT reply FROM chat WHERE key=?", (key,)).fetchone()
        text = row[0] if row else (self._pack().get(key) if self.pack is not None else None)
        return ChatReply.model_validate_json(text).model_copy(
            update={"cached": True, **dict.fromkeys(PER_CALL)}) if text else None

    def put(self, key: str, reply: ChatReply, model: str | None = None) -> None:
        """Store `reply` under `key`; with `model` (the identity that computed it), also its
        speed (`recent`)."""
        with self._file.connect() as db, db:
            db.execute("INSERT OR REPLACE INTO chat VALUES (?, ?)", (key, reply.model_dump_json(exclude=PER_CALL)))
            if model is not None and reply.latency_s > 0:
                db.execute("INSERT INTO speed VALUES (?, ?, ?, ?)", (
                    model, reply.prompt_tokens, reply.completion_tokens, reply.latency_s))
        if self.pack is not None:
            packed = self._pack()
            with self._pack_lock:
                if key not in packed:
                    self.pack.parent.mkdir(parents=True, exist_ok=True)
                    append_rows(self.pack, [{"key": key, "reply": reply.model_dump(
                        mode="json", exclude={"cached", *PER_CALL})}], ensure_ascii=False)
                    packed[key] = reply.model_dump_json(exclude=PER_CALL)

    def recent(self, n: int, model: str | None = None) -> list[ChatReply]:
        """The `n` replies stored last (newest first), as the model returned them: their
        tokens and latency measure the endpoint's throughput (`llm_cost.measured_rates`).
        With `model`, only the replies that identity computed (their tokens and seconds)."""
        if not self.path.exists():
            return []
        with self._file.connect() as db:
            if model is not None:
                rows = db.execute("SELECT prompt_tokens, completion_tokens, latency_s FROM speed "
                                  "WHERE model=? ORDER BY rowid DESC LIMIT ?",
                                  (model, n)).fetchall()
                return [ChatReply(prompt_tokens=p, completion_tokens=c, latency_s=t)
                        for p, c, t in rows]
            rows = db.execute("SELECT reply FROM chat ORDER BY rowid DESC LIMIT ?",
                              (n,)).fetchall()
        return [ChatReply.model_validate_json(r[0]) for r in rows]
