"""The fastest correct way to run the local model on each processor class: the committed table, read at launch.

A path is what the llama-server `ServerConfig` leaves open, beside the CPU variant (ggml's pick,
`binary.runnable_binary`): the weight format of a named model (its shipped file or the same
weights converted once, `models.converted_model`), repacked weight layouts or not, batch and
micro-batch sizes and flash attention. `FASTEST` holds, per `processor.processor_class`, the path
measured fastest there with answers checked (benchmarks/llm_ceiling.py, docs/servers.md), or
today's default where the class is unmeasured on idle cores (`TODAY`; `source` says which).
`chosen_path(config)` is the path a config runs: `llm.server.repack`, when set, overrides the
table's; a `.gguf` path as `llm.server.model` is served as it is (the table's weights apply to
a named model only). The choice is in the start log, in the reply cache's model identity
(`weights_identity`, `settings_identity`: a path serving other weights or other batch sizes
never reuses another's replies) and in run folders (`server.server_settings`).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentic_rag.config_llm import ServerConfig
from agentic_rag.llm.models import MODELS, ModelMissing, converted_model
from agentic_rag.llm.processor import processor_class

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FastPath:
    weights: str = "Q4_K_M"  # a named model's format served (models.WEIGHT_FORMATS)
    repack: bool | None = None  # None: binary.repacks' rule for the variant that runs
    n_batch: int = 512
    n_ubatch: int = 512
    flash_attn: bool = False
    source: str = "today's default"


TODAY = FastPath()  # what the llama-server ran before the table (server.py's batch sizes)

# per processor class (processor.PROCESSOR_CLASSES): the measured winner, or TODAY where unmeasured
FASTEST: dict[str, FastPath] = {
    "AMX": FastPath(source="today's default: sapphirerapids (AMX) 1.6x zen4's prompt tokens/s "
                    "on our Xeons (docs/servers.md); weight formats, batch sizes and flash "
                    "attention not measured there"),
    "AVX-512": FastPath(source="today's default, measured fastest: AMD EPYC zen4, idle cores, "
                        "2026-12-07 (benchmarks/LLM_CEILING.md): 152 prompt tokens/s, no "
                        "candidate faster beyond the run's spread"),
    "AVX2": FastPath(source="today's default: unmeasured on an AVX2-only processor (run "
                     "`make llm-ceiling` on one; the haswell variant forced on zen4 is "
                     "another measure on other hardware)"),
    "x86-64": FastPath(source="today's default: unmeasured"),
}


def fastest_path(cls: str | None = None) -> FastPath:
    """The table's path for processor class `cls` (default: this processor's); `TODAY` for a
    class it does not name."""
    return FASTEST.get(cls if cls is not None else processor_class(), TODAY)


def chosen_path(config: ServerConfig) -> FastPath:
    """The path the llama-server of `config` runs: the table's for this processor, with
    `llm.server.repack` when set, and the weights the model as configured has (a .gguf path
    is served as it is)."""
    path = fastest_path()
    if config.model not in MODELS:
        path = FastPath(**{**asdict(path), "weights": "file"})
    if config.repack is not None:
        path = FastPath(**{**asdict(path), "repack": config.repack})
    return path


def served_weights(config: ServerConfig) -> tuple[Path | None, dict[str, Any]]:
    """The weights file the llama-server of `config` serves (None: `models.resolve_model`'s, the
    model as configured) and its record: a named model in the chosen path's format other than
    its shipped one is converted once (`models.converted_model`)."""
    fmt = chosen_path(config).weights
    spec = MODELS.get(config.model)
    if spec is None or fmt == spec.weights:
        return None, {"format": spec.weights if spec else "file"}
    try:
        return _converted(config.model, fmt)
    except ModelMissing as exc:  # llama-quantize not built (`make llama-tools`): the shipped file
        if (config.model, fmt) not in _WARNED:
            _WARNED.add((config.model, fmt))
            logger.warning("the fastest path converts %s to %s, but %s: serving the shipped %s "
                           "(replies keyed as such)", config.model, fmt, exc, spec.weights)
        return None, {"format": spec.weights, "not_converted": str(exc)}


_WARNED: set[tuple[str, str]] = set()


@lru_cache(maxsize=8)
def _converted(model: str, fmt: str) -> tuple[Path, dict[str, Any]]:
    return converted_model(model, fmt)


def weights_identity(config: ServerConfig) -> str | None:
    """What the reply cache keys a llama-server's weights on when the chosen path converts
    them: `<model>:<format>@<the converted file's sha256>`; None when it serves the model as
    configured (the identity is then today's)."""
    path, record = served_weights(config)
    return None if path is None else f"{config.model}:{record['format']}@{record['sha256']}"


def settings_identity(config: ServerConfig) -> str:
    """The chosen path's batch sizes and flash attention for the reply cache's identity ("" at
    today's, so today's identities and the committed reply packs are unchanged)."""
    p = chosen_path(config)
    if (p.n_batch, p.n_ubatch, p.flash_attn) == (TODAY.n_batch, TODAY.n_ubatch, TODAY.flash_attn):
        return ""
    return f"|n_batch={p.n_batch}|n_ubatch={p.n_ubatch}|flash_attn={'on' if p.flash_attn else 'off'}"


def describe(config: ServerConfig) -> dict[str, Any]:
    """The chosen path as a run's meta and the start log say it: processor class, weights,
    batch sizes, flash attention and where the choice comes from."""
    p = chosen_path(config)
    weights = served_weights(config)[1]["format"] if p.weights != "file" else p.weights
    return {"processor_class": processor_class(), "weights": weights, "n_batch": p.n_batch,
            "n_ubatch": p.n_ubatch, "flash_attn": p.flash_attn, "path_source": p.source}
