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

`llama_build_info()` / `server_binary_info(binary)` (the llama.cpp build and CPU variant) and
`server_settings(config)` (the settings that change outputs) are what a run records about its
local LLM; `build_info(config)` picks the one that serves.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.config_llm import LLAMA_SERVER_BUILD, LLMConfig, ServerConfig
from agentic_rag.llm.models import ModelMissing, resolve_model

logger = logging.getLogger(__name__)


class ServerError(RuntimeError):
    pass


def _get(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
            return json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


LAUNCHER = "agentic_rag.llm.launch"
# llama_cpp.server's defaults that change outputs or speed and that `command` does not set
_SERVER_DEFAULTS = {"n_batch": 512, "n_ubatch": 512, "flash_attn": False, "logits_all": True}
# what `command` passes a llama-server binary: llama_cpp.server's batch sizes and attention
_BINARY_DEFAULTS = {"n_batch": 512, "n_ubatch": 512, "flash_attn": False}


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


_VARIANT_LIB = re.compile(r"libggml-cpu-([\w.-]+)\.so")


def cpu_variants(binary: str) -> list[str]:
    """The ggml CPU variants built beside a llama-server (`libggml-cpu-<variant>.so`; none
    for a build without GGML_BACKEND_DL)."""
    return sorted(m.group(1) for f in Path(binary).parent.iterdir()
                  if (m := _VARIANT_LIB.fullmatch(f.name)))


def variant_binary(binary: str, variant: str) -> str:
    """`binary` held to one of its ggml CPU variants: `<its folder>/variants/<variant>/`, with
    a hard link to it (a copy across file systems), links to its other libraries and, of the
    `libggml-cpu-*.so` CPU libraries, only `variant`'s. ggml loads the best variant it finds
    beside the executable (and in the working directory: the server runs from that folder),
    so there it can load only this one. Made once per build, under a lock (threads and
    processes may ask at once), and remade when the binary changes."""
    import fcntl
    import tempfile

    exe = Path(binary)
    if not exe.is_file():
        raise ServerError(f"llm.server.binary = {binary!r}: no executable file there (build it "
                          "with `make llama-server`)")
    built = cpu_variants(binary)
    if variant not in built:
        raise ServerError(f"llm.server.cpu_variant = {variant!r}: {binary} has no "
                          f"libggml-cpu-{variant}.so beside it (variants built: "
                          f"{', '.join(built) or 'none, not a GGML_BACKEND_DL build'})")
    root = exe.parent / "variants"
    folder, held = root / variant, root / variant / exe.name
    root.mkdir(exist_ok=True)
    with _VARIANT_LOCK, (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        st = exe.stat()
        if held.exists() and (held.stat().st_size, held.stat().st_mtime_ns) == (
                st.st_size, st.st_mtime_ns):
            return str(held)
        tmp = Path(tempfile.mkdtemp(prefix=f".{variant}.", dir=root))
        try:
            try:
                os.link(exe, tmp / exe.name)
            except OSError:
                shutil.copy2(exe, tmp / exe.name)
            for lib in exe.parent.iterdir():
                if ".so" in lib.name and (not lib.name.startswith("libggml-cpu-")
                                          or lib.name == f"libggml-cpu-{variant}.so"):
                    (tmp / lib.name).symlink_to(lib.absolute())
            if folder.exists():  # a stale build: moved aside first (a running server keeps it)
                old = Path(tempfile.mkdtemp(prefix=f".old-{variant}.", dir=root))
                folder.rename(old / variant)
                shutil.rmtree(old, ignore_errors=True)
            tmp.rename(folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return str(held)


_VARIANT_LOCK = threading.Lock()  # flock is per open file: threads of one process lock here


def served_binary(config: ServerConfig) -> str | None:
    """The llama-server executable `config` runs: `llm.server.binary`, held to
    `llm.server.cpu_variant` when one is set (`variant_binary`), else to the best built variant
    that runs here (`runnable_binary`); None for llama-cpp-python."""
    if not config.binary:
        return None
    return _pinned(config.binary, config.cpu_variant) if config.cpu_variant \
        else runnable_binary(config.binary)


# ggml's x86 CPU variants, best first (ggml/src/CMakeLists.txt; its score ranks them so)
VARIANT_RANK = ("sapphirerapids", "zen4", "cooperlake", "icelake", "cascadelake", "cannonlake",
                "skylakex", "alderlake", "haswell", "piledriver", "ivybridge", "sandybridge",
                "sse42", "x64")
PROBE_MODEL = "smollm2-135m"  # the test completion's model (98 MB)
PROBE_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog."] * 8)  # ~80 tokens
PROBE_TIMEOUT_S = 120.0  # to load the probe model and answer; a hang counts as running


@lru_cache(maxsize=8)
def runnable_binary(binary: str) -> str:
    """`binary` when ggml's pick of CPU variant for this processor answers a test completion
    (`probe_variant`), else the binary held to the best built variant below it that does
    (`variant_binary`): a variant that dies (AMX under some hypervisors: SIGILL) is never
    served. Says which one runs (logged; a fall-back as a warning). A binary without run-time
    variants is returned as it is. Once per process; the test completions are remembered per
    binary and processor (`variants/probed.json`)."""
    try:
        pick = server_binary_info(binary)["cpu_variant"]
    except ServerError as exc:  # loading ggml's pick killed it (a missing binary: its error)
        if not (Path(binary).is_file() and os.access(binary, os.X_OK)):
            raise
        pick, died = None, str(exc)
    else:
        if pick is None:  # a linked-in CPU backend: nothing to choose
            return binary
        if (died := probe_variant(binary, pick)) is None:
            logger.info("llama-server: CPU variant %s (ggml's pick here; a test completion ran)",
                     pick)
            return binary
    rank = {v: i for i, v in enumerate(VARIANT_RANK)}
    below = [v for v in sorted(cpu_variants(binary), key=lambda v: rank.get(v, len(rank)))
             if pick is None or rank.get(v, len(rank)) > rank.get(pick, -1)]
    for v in below:
        try:
            held = _pinned(binary, v)  # an error when this processor cannot load it
        except ServerError:
            continue
        if probe_variant(held, v) is None:
            logger.warning("llama-server: ggml's CPU variant %s does not run here (%s); running %s, "
                        "the next built variant that answers a test completion",
                        pick or "(unknown)", died, v)
            return held
    raise ServerError(f"{binary}: no built CPU variant answers a test completion on this "
                      f"processor (ggml's pick {pick!r}: {died}; built: "
                      f"{', '.join(cpu_variants(binary)) or 'none'}); set "
                      "llm.server.binary: null for llama-cpp-python's server")


def _cpu_signature() -> str:
    """This processor as the variant probe remembers it: model name and feature flags."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    lines = [line for line in text.splitlines() if line.startswith(("model name", "flags"))]
    import hashlib

    return hashlib.sha256("\n".join(sorted(set(lines))).encode()).hexdigest()[:16]


def probe_variant(exe: str, variant: str) -> str | None:
    """None when the llama-server `exe` (running `variant`) answers a short completion of
    `PROBE_MODEL` (an ~80-token prompt: batched kernels, then 4 generated tokens); otherwise
    how it died (a signal: SIGILL, SIGSEGV ...). Anything else (no probe model, a server that
    will not start for another reason) is not the variant's fault and counts as running: the
    real start reports it. Remembered in `<exe's folder>/variants/probed.json` by binary,
    variant and processor."""
    path = Path(exe)
    held = path.parent.parent.name == "variants"  # variants/<v>/llama-server
    root = path.parent.parent if held else path.parent / "variants"
    memo_file = root / "probed.json"
    st = path.stat()
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{variant}|{_cpu_signature()}"
    try:
        memo = json.loads(memo_file.read_text())
    except (OSError, ValueError):
        memo = {}
    if key in memo:
        return memo[key]
    died = _test_completion(exe)
    if died is not False:  # False: could not tell; asked again next time
        memo[key] = died
        root.mkdir(exist_ok=True)
        tmp = memo_file.with_name(f".probed.{os.getpid()}.json")
        tmp.write_text(json.dumps(memo, indent=1, sort_keys=True))
        tmp.replace(memo_file)
    return died or None


def _test_completion(exe: str) -> str | None | bool:
    """Run `exe` on `PROBE_MODEL` and ask one completion: None when it answered, the signal
    that killed it, or False when the test could not be made (no probe model ...)."""
    try:
        model = resolve_model(PROBE_MODEL)
    except (ModelMissing, OSError) as exc:
        logger.warning("llama-server: CPU variant not tested (%s)", exc)
        return False
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [str(Path(exe).absolute()), "--model", str(model), "--host", "127.0.0.1", "--port",
           str(port), "--ctx-size", "512", "--threads", "2", "--no-webui"]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, cwd=Path(exe).parent)
    except OSError as exc:
        logger.warning("llama-server: CPU variant not tested (%s)", exc)
        return False
    body = json.dumps({"prompt": PROBE_PROMPT, "n_predict": 4, "temperature": 0}).encode()
    try:
        deadline = time.monotonic() + PROBE_TIMEOUT_S
        while time.monotonic() < deadline and proc.poll() is None:
            if (_get(f"http://127.0.0.1:{port}/health", 1.0) or {}).get("status") == "ok":
                req = urllib.request.Request(f"http://127.0.0.1:{port}/completion", data=body,
                                             headers={"Content-Type": "application/json"})
                try:
                    urllib.request.urlopen(req, timeout=PROBE_TIMEOUT_S).read()  # noqa: S310
                except (urllib.error.URLError, OSError):
                    time.sleep(0.5)  # it may have died on the prompt: see below
                break
            time.sleep(0.2)
        rc = proc.poll()
        if rc is not None and rc < 0:
            return signal.Signals(-rc).name
        return None if rc is None or rc == 0 else False
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@lru_cache(maxsize=8)
def _pinned(binary: str, variant: str) -> str:
    """`variant_binary`, checked to load `variant`; once per process (the reply cache's
    identity asks for it on every chat model)."""
    held = variant_binary(binary, variant)
    ran = server_binary_info(held)["cpu_variant"]
    if ran != variant:  # e.g. a GGML_BACKEND_DIR compiled in, or GGML_BACKEND_PATH
        raise ServerError(f"llm.server.cpu_variant = {variant!r}, but {held} loads {ran!r}: "
                          "ggml finds CPU libraries elsewhere too")
    return held


@lru_cache(maxsize=4)
def server_binary_info(binary: str) -> dict[str, Any]:
    """A `llama-server` executable's build as a run records it: its version line (llama.cpp's
    build number and commit), the compiler line, and the CPU backend ggml loads for this
    processor (`-v --list-devices` loads the backends; a GGML_BACKEND_DL build names the variant's
    library, e.g. `libggml-cpu-zen4.so`; None for a linked-in CPU backend). Run from the
    binary's folder, as the server is: ggml also loads variants from the working directory."""
    exe = Path(binary)
    if not exe.is_file() or not os.access(exe, os.X_OK):
        raise ServerError(f"llm.server.binary = {binary!r}: no executable file there (build it "
                          "with `make llama-server`)")
    def run(*flags: str) -> str:
        try:
            r = subprocess.run([str(exe.absolute()), *flags], capture_output=True, text=True,
                               timeout=120, stdin=subprocess.DEVNULL, cwd=exe.parent)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ServerError(f"{binary} {' '.join(flags)}: {exc}") from exc
        if r.returncode != 0:
            raise ServerError(f"{binary} {' '.join(flags)} exited with {r.returncode}: "
                              f"{(r.stderr or r.stdout).strip()[-500:]}")
        return r.stdout + r.stderr

    out = [run("--version"), run("-v", "--list-devices")]  # -v: ggml logs what it loads
    version = re.search(r"^version: (.+)$", out[0], re.M)
    built = re.search(r"^built with (.+)$", out[0], re.M)
    variant = _VARIANT_LIB.search(out[1])
    # llama.cpp logs from a worker thread that can exit before it writes: the "loaded CPU
    # backend" line was missing in 5 of 20 runs on a busy 2-core machine. A build with CPU
    # libraries beside it is asked again (a lost line would key replies as a linked build's)
    for _ in range(7 if variant is None and cpu_variants(str(exe)) else 0):
        if (variant := _VARIANT_LIB.search(run("-v", "--list-devices"))) is not None:
            break
    return {"server": "llama-server", "binary": str(exe.resolve()),
            "version": version.group(1).strip() if version else "unknown",
            "built_with": built.group(1).strip() if built else None,
            "backend_dl": variant is not None,
            "cpu_variant": variant.group(1) if variant else None}


def listener_pid(port: int) -> int | None:
    """The process listening on TCP `port` (IPv4 or IPv6), from /proc; None when it cannot
    be told (not Linux, or another user's process)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    if not inodes:
        return None
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                return int(proc.name)
        except OSError:
            continue
    return None


def mapped_cpu_variant(pid: int) -> str | None:
    """The ggml CPU variant a running process has loaded (`libggml-cpu-<v>.so` in its memory
    map); None when it has none (a linked-in backend, not llama.cpp) or cannot be read."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return None
    found = _VARIANT_LIB.search(maps)
    return found.group(1) if found else None


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
    llama-server binary the same batch sizes and flash-attention setting, which `command`
    passes explicitly, and no `logits_all`."""
    if config.binary:
        return {"server": server_kind(config), "slots": config.slots, "n_ctx": config.n_ctx,
                "n_threads": config.n_threads, "n_threads_batch": config.n_threads,
                "chat_format": config.chat_format, **_BINARY_DEFAULTS}
    env = {k: os.environ[k.upper()] for k in _SERVER_DEFAULTS if k.upper() in os.environ}
    return {"server": server_kind(config), "slots": 1, "n_ctx": config.n_ctx,
            "n_threads": config.n_threads, "n_threads_batch": config.n_threads,
            "chat_format": config.chat_format, **_SERVER_DEFAULTS, **env}


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
            "2.5x fewer questions an hour (docs/servers.md); retry the build: make llama-server")


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
        models = _get(f"{self.base_url}/models", timeout) or {}
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
            d = _BINARY_DEFAULTS
            exe = Path(served_binary(c)).absolute()  # runs from its folder (see `start`)
            cmd = [str(exe), "--model", str(Path(model_path).absolute()), "--alias", self.alias,
                   "--host", c.host, "--port", str(c.port), "--ctx-size", str(c.n_ctx * c.slots),
                   "--parallel", str(c.slots), "--threads", str(c.n_threads),
                   "--threads-batch", str(c.n_threads), "--batch-size", str(d["n_batch"]),
                   "--ubatch-size", str(d["n_ubatch"]),
                   "--flash-attn", "on" if d["flash_attn"] else "off", "--no-webui"]
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
        binary = served_binary(self.config)
        if binary:
            info = server_binary_info(binary)  # a missing or broken binary: its own error
            logger.info("local LLM: llama-server %s, CPU variant %s", info["version"],
                     info["cpu_variant"] or "linked in")
        else:
            if self.python is None:
                try:
                    import llama_cpp  # noqa: F401
                except ImportError:
                    raise ServerError("llama-cpp-python is not installed: run "
                                      "`pip install 'llama-cpp-python[server]==0.3.36'` (builds "
                                      "with gcc)") from None
            _warn_portable_fallback()
        model_path = resolve_model(self.config.model)
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
                f"runs (built: {', '.join(built)}; AMX, in `sapphirerapids`, faults under some "
                "hypervisors, where `zen4` or `icelake` run on AVX-512 and `haswell` on AVX2). "
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
