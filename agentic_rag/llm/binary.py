"""llama.cpp's C++ `llama-server` executable: its build, its ggml CPU variants and which of them runs here.

`served_binary(config)` is the executable a config runs: held to `llm.server.cpu_variant`
(`variant_binary`: a folder where ggml can load only that variant) or, by default, ggml's pick
for this processor when a test completion runs on it, else the best built variant below it that
does (`runnable_binary`, `probe_variant`: ggml's AMX kernels as released died of SIGILL on
our Xeons; a build without the Makefile's AMX_TLS_PATCH still would).
`server_binary_info` is what a run records about it; `listener_pid` / `mapped_cpu_variant`
tell which variant a server already running on a port has loaded.
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
import threading
import time
import urllib.error
import urllib.request
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.config_llm import ServerConfig
from agentic_rag.llm import fast_path
from agentic_rag.llm.models import ModelMissing, resolve_model

logger = logging.getLogger(__name__)


class ServerError(RuntimeError):
    """A local LLM server that cannot be built, started, reached or trusted."""


def get_json(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - loopback only
            return json.loads(r.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


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


# ggml's CPU variants whose plain kernels read prompts faster than its repacked weight layouts
# (CPU_REPACK) on the Q4_K_M model: 2026-12-06, AMD EPYC, 2 threads, a 1,532-token prompt,
# prompt tokens/s repacked -> plain: zen4 84-90 -> 107-119, icelake 72-82 -> 107-126 (both
# AVX-512 VNNI); skylakex 74-83 -> 65-66 and haswell 52-62 -> 57-60 are not (docs/servers.md).
# `sapphirerapids` keeps them on: its AMX kernels are an extra buffer type too.
PLAIN_KERNELS_FASTER = frozenset({"zen4", "icelake"})


# the server this project's committed llama-server reply packs were made by (the claims' rows,
# the LLM strategies, the agent-support and tune experiments): `zen4`, weights repacked (the
# only setting before 2026-12-06). experiments/llama-server.yaml is the same as a config overlay.
PACK_SERVER = {"llm.server.cpu_variant": "zen4", "llm.server.repack": True}


def repacks(config: ServerConfig, variant: str | None) -> bool:
    """Whether the llama-server `config` runs, on CPU `variant`, repacks the weights
    (`llm.server.repack`; None: the table's setting, else not for `PLAIN_KERNELS_FASTER`). The two round differently,
    so the reply cache keys on it (`cache.model_identity`). The fastest-path table
    (`fast_path.FASTEST`) may set it for this processor class; the setting overrides it."""
    if config.repack is not None:
        return config.repack
    table = fast_path.fastest_path().repack
    return table if table is not None else variant not in PLAIN_KERNELS_FASTER


def served_repacks(config: ServerConfig) -> bool:
    """`repacks` for the variant the llama-server `config` runs (`served_binary`)."""
    return repacks(config, server_binary_info(served_binary(config))["cpu_variant"])


def served_repack(pid: int) -> bool | None:
    """Whether a running llama-server repacks its weights, as llama.cpp decides it: the last
    of `--repack` / `--no-repack` / `-nr` on its command line, else its LLAMA_ARG_REPACK
    environment variable, else yes (the default); None when /proc cannot tell."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    flags = [a for a in args if a in (b"--repack", b"--no-repack", b"-nr")]
    if flags:
        return flags[-1] == b"--repack"
    try:
        env = dict(x.split(b"=", 1) for x in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
                   if b"=" in x)
    except OSError:
        return None
    value = env.get(b"LLAMA_ARG_REPACK")
    if value is None:
        return True
    # llama.cpp's parse_bool_value: true/1/on/enabled, false/0/off/disabled
    return value.strip().lower() not in (b"false", b"0", b"off", b"disabled")


PROBE_MODEL = "smollm2-135m"  # the test completion's model (98 MB)


PROBE_PROMPT = " ".join(["The quick brown fox jumps over the lazy dog."] * 8)  # ~80 tokens


PROBE_TIMEOUT_S = 120.0  # to load the probe model and answer; a hang counts as running


@lru_cache(maxsize=8)
def runnable_binary(binary: str) -> str:
    """`binary` when ggml's pick of CPU variant for this processor answers a test completion
    (`probe_variant`), else the binary held to the best built variant below it that does
    (`variant_binary`): a variant that dies (unpatched AMX on our Xeons: SIGILL) is never
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
            if (get_json(f"http://127.0.0.1:{port}/health", 1.0) or {}).get("status") == "ok":
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
