"""This processor as the project's speed figures name it: its class (`processor_class`: AMX,
AVX-512, AVX2 or x86-64, which of ggml's CPU variants can load here) and what a speed figure
records about it (`processor_info`). Read by `binary` (the llama-server build) and
`fast_path` (the fastest path per class) alike.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# the processor classes the project's figures are reported by (docs/servers.md), best first:
# the flags that make each (Linux /proc/cpuinfo names)
PROCESSOR_CLASSES = (("AMX", ("amx_tile", "amx_int8", "avx512f")),
                     ("AVX-512", ("avx512f", "avx512bw", "avx512vl")),
                     ("AVX2", ("avx2", "fma")),
                     ("x86-64", ()))


def processor_class(flags: str | None = None) -> str:
    """This processor's class, `AMX`, `AVX-512`, `AVX2` or `x86-64`, from its feature flags
    (`/proc/cpuinfo`'s first `flags` line when `flags` is None; `unknown` when unreadable):
    which of ggml's CPU variants can load here, and so which speed figures apply."""
    if flags is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return "unknown"
        flags = next((line.split(":", 1)[1] for line in text.splitlines()
                      if line.startswith("flags")), None)
        if flags is None:
            return "unknown"
    have = set(flags.split())
    return next(name for name, need in PROCESSOR_CLASSES if have.issuperset(need))


def processor_info() -> dict[str, Any]:
    """This processor as a speed figure records it (docs/MEASURE: speed figures name their
    processor): vendor, family/model/stepping, model name, feature flags, `processor_class`,
    and the CPUs this process may use."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        text = ""
    first: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if first:
                break  # one processor's block
            continue
        first.setdefault(key.strip(), value.strip())
    flags = first.get("flags")
    return {"vendor": first.get("vendor_id"), "family": first.get("cpu family"),
            "model": first.get("model"), "stepping": first.get("stepping"),
            "model_name": first.get("model name"), "processor_class": processor_class(flags),
            "cpus": len(os.sched_getaffinity(0)), "flags": sorted((flags or "").split())}
