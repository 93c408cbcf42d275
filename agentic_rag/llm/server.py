"""Start and stop llama.cpp's OpenAI-compatible server on 127.0.0.1.

    with LlamaServer(cfg.llm.server, home=cfg.home) as srv:
        model = make_chat_model(cfg.llm, cfg.home, base_url=srv.base_url)

`start()` launches llama-cpp-python's server (`python -m agentic_rag.llm.launch`, which
loads ggml's best CPU backend for this processor when the build ships them as run-time
variants, then runs `llama_cpp.server`) as a child process, waits until
`/v1/models` answers (or the process dies: its log tail is in the error), and sends
a one-token warm-up request (the first request carries 30–45 s of extra latency on
2 cores). `stop()` terminates it, then kills it after a grace period. If a server
already answers on the port with the same model alias it is reused, not restarted (a
llama-server only if the CPU variant it has loaded is the one the config runs).

With `llm.server.binary` set, llama.cpp's own C++ `llama-server` runs instead (built from the
same vendored llama.cpp, `make llama-server`): it returns top_logprobs without computing every
prompt position's logits (llama-cpp-python needs `logits_all=True` for them, which slows
prompt evaluation) and decodes `llm.server.slots` sequences at once.

The llama-server runs the fastest correct path the committed table names for this processor
class (`fast_path.chosen_path`: weight format, repack, batch sizes, flash attention; today's
default where a class is unmeasured), said in the start log.

`llama_build_info()` / `server_binary_info(binary)` (the llama.cpp build and CPU variant) and
`server_settings(config)` (the settings that change outputs) are what a run records about its
local LLM; `build_info(config)` picks the one that serves.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.config_llm import LLAMA_SERVER_BUILD, LLMConfig, ServerConfig
from agentic_rag.llm.binary import (
    ServerError,
    cpu_variants,
    get_json,
    listener_pid,
    mapped_cpu_variant,
    repacks,
    served_binary,
    served_repack,
    served_repacks,
    server_binary_info,
)
from agentic_rag.llm.fast_path import chosen_path, describe, served_weights
from agentic_rag.llm.models import model_path, resolve_model

logger = logging.getLogger(__name__)


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


LAUNCHER = "agentic_rag.llm.launch"
# llama_cpp.server's defaults that change outputs or speed and that `command` does not set
_SERVER_DEFAULTS = {"n_batch": 512, "n_ubatch": 512, "flash_attn": False, "logits_all": True}


def _binary_settings(config: ServerConfig) -> dict[str, Any]:
    """What `command` passes a llama-server binary: the chosen path's batch sizes and
    attention (`fast_path.chosen_path`; today's: llama_cpp.server's 512 / 512 / off)."""
    p = chosen_path(config)
    return {"n_batch": p.n_batch, "n_ubatch": p.n_ubatch, "flash_attn": p.flash_attn}


def _launcher(python: str | None) -> tuple[list[str], dict[str, str] | None]:
    """Command prefix and environment that run the launcher under `python` (default: this
    interpreter); another interpreter gets this checkout on PYTHONPATH."""
    if python is None or python == sys.executable:
        return [sys.executable, "-m", LAUNCHER], None
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(x for x in (root, env.get("PYTHONPATH")) if x)
    return [python, "-m", LAUNCHER], env


@lru_cache(maxsize=4)
def llama_build_info(python: str | None = None) -> dict[str, Any]:
    """The local LLM's build as a run's meta records it: llama-cpp-python and ggml versions,
    ggml commit, whether CPU variants are loaded at run time (`backend_dl`), the variant
    loaded on this machine (`cpu_variant`, e.g. "zen4"; None for a linked-in backend), its
    compiled features and llama.cpp's system-info line. Asked of a child interpreter (the one
    that would run the server; loads no model, ~1 s), once per process."""
    cmd, env = _launcher(python)
    try:
        out = subprocess.run([*cmd, "--info"], capture_output=True, text=True, timeout=120,
                             env=env, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerError(f"{' '.join(cmd)} --info: {exc}") from exc
    if out.returncode != 0:
        raise ServerError(f"{' '.join(cmd)} --info exited with {out.returncode}: "
                          f"{out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def server_kind(config: ServerConfig) -> str:
    """Which server `config` runs: "llama-server" (a binary) or "llama_cpp.server"."""
    return "llama-server" if config.binary else "llama_cpp.server"


def build_info(config: ServerConfig) -> dict[str, Any]:
    """The build of whichever server `config` runs: `server_binary_info` for a llama-server
    binary, else llama-cpp-python's (`llama_build_info`)."""
    return server_binary_info(served_binary(config)) if config.binary else llama_build_info()


def server_settings(config: ServerConfig) -> dict[str, Any]:
    """The server settings that change outputs or speed: slots (llama_cpp.server serves one
    request at a time), context size, threads, chat format, and llama_cpp.server's defaults
    (overridden by its N_BATCH / N_UBATCH / FLASH_ATTN environment variables when set); for a
    llama-server binary the chosen path's batch sizes and flash-attention setting, which
    `command` passes explicitly, whether it repacks the weights (`binary.repacks`; the setting
    as configured when its build cannot be inspected), no `logits_all`, and the path
    (`fast_path.describe`: processor class, weight format, where the choice comes from)."""
    if config.binary:
        try:
            repack: bool | None = served_repacks(config)
        except ServerError:
            repack = config.repack
        return {"server": server_kind(config), "slots": config.slots, "n_ctx": config.n_ctx,
                "n_threads": config.n_threads, "n_threads_batch": config.n_threads,
                "chat_format": config.chat_format, **_binary_settings(config), "repack": repack,
                **describe(config)}
    env = {k: os.environ[k.upper()] for k in _SERVER_DEFAULTS if k.upper() in os.environ}
    return {"server": server_kind(config), "slots": 1, "n_ctx": config.n_ctx,
            "n_threads": config.n_threads, "n_threads_batch": config.n_threads,
            "chat_format": config.chat_format, **_SERVER_DEFAULTS, **env}


# the llama-server flags a reused server must share with this config's command
PATH_FLAGS = ("--model", "--batch-size", "--ubatch-size", "--flash-attn")


def differing_args(theirs: list[str], ours: list[str], flags: tuple[str, ...] = PATH_FLAGS) -> str:
    """The `flags` whose values differ between two llama-server command lines (a model file
    compared by its resolved path), as `--flag theirs != ours`; "" when none do. A flag missing
    from `theirs` is llama-server's default, not compared."""
    def value(cmd: list[str], flag: str) -> str | None:
        hits = [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == flag]
        if not hits:
            return None
        return str(Path(hits[-1]).resolve()) if flag == "--model" else hits[-1]

    out = [f"{f} {value(theirs, f)} != {value(ours, f)}" for f in flags
           if value(theirs, f) is not None and value(theirs, f) != value(ours, f)]
    return "; ".join(out)


_WARNED: set[str] = set()


def portable_fallback_reason() -> str | None:
    """Why llama-cpp-python's portable server runs although llama.cpp's llama-server is the
    default (`make install` builds it): its build failed (the Makefile's `FAILED` note) or is
    missing. None when it was chosen ($AGENTIC_RAG_LLAMA_SERVER, or `llm.server.binary: null`
    with the build there)."""
    from agentic_rag.config_llm import LLAMA_SERVER_ENV

    if os.environ.get(LLAMA_SERVER_ENV) is not None:
        return None
    failed = LLAMA_SERVER_BUILD.parents[2] / "FAILED"  # .venv/llama-server/FAILED
    if failed.is_file():
        what = failed.read_text(errors="replace").strip() or "the llama-server build failed"
    elif not os.access(LLAMA_SERVER_BUILD, os.X_OK):
        what = f"no llama-server at {LLAMA_SERVER_BUILD} (`make install` builds it)"
    else:
        return None
    return (f"{what}: the local LLM runs on llama-cpp-python's portable server instead, about "
            "2.5x fewer questions an hour on AVX-512 processors (3.3x with AMX; 1.10x measured "
            "on an AVX2-only one: docs/servers.md); retry the build: make llama-server")


def _warn_portable_fallback() -> None:
    """`portable_fallback_reason` as one warning line, once per process."""
    why = portable_fallback_reason()
    if why and why not in _WARNED:
        _WARNED.add(why)
        logger.warning("%s", why)  # without logging set up, Python prints it to stderr


class LlamaServer:
    """`python`: the interpreter whose llama-cpp-python serves (default: this one), e.g. a
    separate venv holding another build."""

    def __init__(self, config: ServerConfig, home: str | Path = ".agentic_rag",
                 alias: str = "local", python: str | None = None) -> None:
        self.config = config
        self.home = Path(home)
        self.alias = alias
        self.python = python
        self.proc: subprocess.Popen | None = None
        self.log_path = self.home / "logs" / f"llama-server-{config.port}.log"

    @property
    def base_url(self) -> str:
        return f"http://{self.config.host}:{self.config.port}/v1"

    def running(self, timeout: float = 2.0) -> bool:
        return self._served(timeout) is not None

    def _served(self, timeout: float = 2.0) -> dict | None:
        """The /v1/models entry of our alias on the port, or None."""
        models = get_json(f"{self.base_url}/models", timeout) or {}
        return next((m for m in models.get("data", []) if isinstance(m, dict)
                     and m.get("id") == self.alias), None)

    def _check_kind(self, entry: dict) -> None:
        """A server we did not start is reused only if it is the kind the config names:
        replies are cached under the config's identity (llama-server's build or
        llama-cpp-python's), so the wrong kind would file its replies under another's."""
        c = self.config
        theirs = "llama-server" if entry.get("owned_by") == "llamacpp" else "llama_cpp.server"
        if theirs != (ours := server_kind(c)):
            raise ServerError(
                f"{c.host}:{c.port} already serves {self.alias!r} from a {theirs} but "
                f"llm.server.binary is {c.binary!r} (a {ours}): stop that server or set "
                "llm.server.port to a free port")
        # a llama-server of ours on the port runs some CPU variant; the replies are cached
        # under the one the config runs (kernels of two variants round differently)
        pid = listener_pid(c.port) if theirs == "llama-server" else None
        loaded = mapped_cpu_variant(pid) if pid is not None else None
        if loaded is not None and loaded != (want := build_info(c)["cpu_variant"]):
            raise ServerError(
                f"{c.host}:{c.port} already serves {self.alias!r} from a llama-server running "
                f"the {loaded!r} CPU variant (pid {pid}), but this config runs {want!r} "
                f"(llm.server.cpu_variant = {c.cpu_variant!r}): its replies would be cached "
                "under the wrong build. Stop that server or set llm.server.port to a free port")
        if loaded is not None and (differ := self._differing_args(pid)):
            raise ServerError(
                f"{c.host}:{c.port} already serves {self.alias!r} from a llama-server (pid {pid}) "
                f"run another way than this config's path: {differ}. Its replies would be "
                "cached under the wrong identity: stop that server or set llm.server.port to a "
                "free port")
        theirs_repack = served_repack(pid) if loaded is not None else None
        if theirs_repack is not None and theirs_repack != (want_repack := repacks(c, loaded)):
            raise ServerError(
                f"{c.host}:{c.port} already serves {self.alias!r} from a llama-server that "
                f"{'repacks' if theirs_repack else 'does not repack'} its weights (pid {pid}), but "
                f"this config's does{'' if want_repack else ' not'} (llm.server.repack = {c.repack!r}): "
                "the two round differently. Stop that server or set llm.server.port to a free port")

    def _differing_args(self, pid: int) -> str:
        """How the llama-server `pid` was started otherwise than this config's path would start
        it: its model file, batch sizes or flash attention ("" when alike or unreadable)."""
        try:
            theirs = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        except OSError:
            return ""
        model = served_weights(self.config)[0] or model_path(self.config.model)
        return differing_args(theirs, self.command(model))

    def _already_serving(self) -> bool:
        """True when a server with our alias answers on the port; False when the port is free.
        A llama.cpp server busy with a long prompt (another evaluation on the same port)
        answers /models only once the prompt is done: wait for it up to `startup_timeout_s`
        rather than launch a second server that cannot bind."""
        c = self.config
        if not _port_open(c.host, c.port):
            return False
        deadline = time.monotonic() + c.startup_timeout_s
        while time.monotonic() < deadline:
            entry = self._served(timeout=max(1.0, min(30.0, deadline - time.monotonic())))
            if entry is not None:
                self._check_kind(entry)
                return True
            time.sleep(0.5)
        raise ServerError(f"{c.host}:{c.port} is in use by a process that did not answer "
                          f"/v1/models with model {self.alias!r} within {c.startup_timeout_s:.0f}s; "
                          "set llm.server.port to a free port")

    def command(self, model_path: Path) -> list[str]:
        c = self.config
        if c.binary:  # each slot gets n_ctx tokens; no web UI; the defaults that change outputs
            d = _binary_settings(c)
            exe = Path(served_binary(c)).absolute()  # runs from its folder (see `start`)
            cmd = [str(exe), "--model", str(Path(model_path).absolute()), "--alias", self.alias,
                   "--host", c.host, "--port", str(c.port), "--ctx-size", str(c.n_ctx * c.slots),
                   "--parallel", str(c.slots), "--threads", str(c.n_threads),
                   "--threads-batch", str(c.n_threads), "--batch-size", str(d["n_batch"]),
                   "--ubatch-size", str(d["n_ubatch"]),
                   "--flash-attn", "on" if d["flash_attn"] else "off", "--no-webui"]
            # both ways, explicitly: llama.cpp also reads LLAMA_ARG_REPACK from the environment
            cmd.append("--repack" if served_repacks(c) else "--no-repack")
            if c.chat_format:
                cmd += ["--chat-template", c.chat_format]
            return cmd
        cmd = [*_launcher(self.python)[0], "--model", str(model_path),
               "--model_alias", self.alias, "--host", c.host, "--port", str(c.port),
               "--n_ctx", str(c.n_ctx), "--n_threads", str(c.n_threads),
               "--n_threads_batch", str(c.n_threads)]
        if c.chat_format:
            cmd += ["--chat_format", c.chat_format]
        return cmd

    def start(self, warm_up: bool = True) -> LlamaServer:
        """Launch the server, or reuse one already answering on the port (not owned: `stop`
        leaves it running)."""
        if self._already_serving():
            return self
        # the shipped weights checked against their sha256 before anything runs (a tampered
        # file never reaches a process, not even the binary's --version probe)
        shipped = resolve_model(self.config.model)
        binary = served_binary(self.config)
        if binary:
            info = server_binary_info(binary)  # a missing or broken binary: its own error
            path = describe(self.config)
            logger.info("local LLM: llama-server %s, CPU variant %s, %s, weights %s, batch %d/%d, "
                        "flash attention %s (%s processor: %s)", info["version"],
                        info["cpu_variant"] or "linked in",
                        "weights repacked" if repacks(self.config, info["cpu_variant"])
                        else "plain kernels", path["weights"], path["n_batch"], path["n_ubatch"],
                        "on" if path["flash_attn"] else "off", path["processor_class"],
                        path["path_source"])
        else:
            if self.python is None:
                try:
                    import llama_cpp  # noqa: F401
                except ImportError:
                    raise ServerError("llm.server.binary is null (llama-cpp-python's server) "
                                      "but llama-cpp-python is not installed: `make portable` "
                                      "builds it (or `pip install "
                                      "'llama-cpp-python[server]==0.3.36'`, gcc)") from None
            _warn_portable_fallback()
        model_path = (served_weights(self.config)[0] if binary else None) or shipped
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(self.command(model_path), stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=None if binary else _launcher(self.python)[1],
                                     cwd=Path(binary).parent if binary else None)
        deadline = time.monotonic() + self.config.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(self._exit_reason())
            if self.running():
                break
            time.sleep(0.5)
        else:
            self.stop()
            raise ServerError(f"llama.cpp server did not answer within "
                              f"{self.config.startup_timeout_s}s; log {self.log_path}")
        if warm_up:
            self._warm_up()
        return self

    def _exit_reason(self) -> str:
        """Why the server died at start; for a llama-server killed by SIGILL, which CPU
        variant ran and how to pin another."""
        reason = (f"llama.cpp server exited with {self.proc.returncode}; "
                  f"log {self.log_path}:\n{self._log_tail()}")
        c = self.config
        if not (c.binary and self.proc.returncode == -signal.SIGILL):
            return reason
        built = cpu_variants(c.binary)
        if not built:
            return (f"llama-server died of SIGILL (an instruction this machine refuses): "
                    f"{c.binary} has no run-time CPU variants to choose from; rebuild it with "
                    f"`make llama-server` (GGML_NATIVE=OFF, GGML_CPU_ALL_VARIANTS=ON). {reason}")
        ran = server_binary_info(served_binary(c)).get("cpu_variant")
        which = "the pinned" if c.cpu_variant else "ggml's"
        return (f"llama-server died of SIGILL (an instruction this machine refuses) in {which} "
                f"CPU variant {ran!r}: set llm.server.cpu_variant to another one this processor "
                f"runs (built: {', '.join(built)}; AMX, in `sapphirerapids`, faults unless built with "
                "the Makefile's AMX_TLS_PATCH; `zen4` or `icelake` run on AVX-512, `haswell` "
                "on AVX2). "
                f"{reason}")

    def _warm_up(self) -> None:
        body = json.dumps({"model": self.alias, "max_tokens": 1,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=self.config.startup_timeout_s).read()  # noqa: S310
        except (urllib.error.URLError, OSError) as exc:
            if self.proc is not None and self.proc.poll() is not None:  # it died on the prompt
                raise ServerError(self._exit_reason()) from exc
            raise ServerError(f"warm-up request failed: {exc}") from exc

    def _log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serve_local(llm: LLMConfig, home: str | Path, server: ServerConfig | None = None,
                log: Callable[[str], Any] | None = None) -> Iterator[LlamaServer | None]:
    """The embedded server for `llm`, the one way every command and run starts it: when
    `llm.uses_local_server`, started (with `server`, default `llm.server`), or reused when one
    answers on its port, and stopped on exit only if started here; `log` hears one line when
    it is started here. Otherwise (`llm.base_url` / `llm.endpoints` set) nothing is started
    and the context is None: the calls go to those endpoints (`llm.chat.make_chat_model`)."""
    if not llm.uses_local_server:
        yield None
        return
    config = server or llm.server
    srv = LlamaServer(config, home=home)
    if log is not None and not srv.running():
        log(f"starting the local LLM server ({config.model}) ...")
    with srv:
        yield srv
