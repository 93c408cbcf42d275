"""Run llama-cpp-python's server after loading ggml's best CPU backend for this processor.

    python -m agentic_rag.llm.launch --model M.gguf --port 8765 ...   # llama_cpp.server's args
    python -m agentic_rag.llm.launch --info                          # the build, as JSON

llama-cpp-python built with `-DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON` ships one CPU
backend per instruction-set level (`lib/libggml-cpu-haswell.so`, `-zen4.so`,
`-sapphirerapids.so`, ...) and links none of them: ggml picks one at run time only when
`ggml_backend_load_all*` is called, and the bindings never call it (llama-cpp-python issue
#2069: the model then fails to load, "no backends are loaded"). `load_backends` calls
`ggml_backend_load_all_from_path(<llama_cpp/lib>)` on the already loaded libggml, which scores
every variant against the running CPU and loads the best, before any model is loaded. On a
build with the CPU backend linked in (the portable `-DGGML_NATIVE=OFF` build) a backend is
already registered and nothing is loaded.

`AGENTIC_RAG_CPU_VARIANT=haswell` loads that variant instead of the best one (to compare
variants, or to step down on a processor where the best one misbehaves).

Only the standard library and llama_cpp are imported here, so the launcher runs under any
interpreter that has llama-cpp-python.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path
from typing import Any

VARIANT_ENV = "AGENTIC_RAG_CPU_VARIANT"


class BackendError(RuntimeError):
    pass


def _ggml() -> tuple[ctypes.CDLL, Path]:
    """The libggml that llama_cpp loaded, and its folder (where the backends are)."""
    import llama_cpp  # noqa: F401 - loads libllama and its libggml
    from llama_cpp import _ggml

    lib = _ggml.libggml
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_reg_get.restype = ctypes.c_void_p
    lib.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_reg_name.restype = ctypes.c_char_p
    lib.ggml_backend_reg_get_proc_address.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    lib.ggml_backend_reg_get_proc_address.restype = ctypes.c_void_p
    lib.ggml_backend_load.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_load.restype = ctypes.c_void_p
    lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    lib.ggml_backend_load_all_from_path.restype = None
    return lib, Path(_ggml.libggml_base_path)


def variant_files(lib_dir: Path) -> dict[str, Path]:
    """The CPU variants a GGML_BACKEND_DL build ships: {"haswell": .../libggml-cpu-haswell.so}."""
    return {p.name[len("libggml-cpu-"):].split(".")[0]: p
            for p in sorted(lib_dir.glob("libggml-cpu-*.so"))}


def registered_backends() -> list[str]:
    lib, _ = _ggml()
    return [lib.ggml_backend_reg_name(lib.ggml_backend_reg_get(i)).decode()
            for i in range(lib.ggml_backend_reg_count())]


def load_backends() -> list[str]:
    """Register ggml's CPU backend if the build left it to be loaded; a no-op when a backend
    is already registered (a linked-in build, or a second call). Returns the backends'
    names; raises BackendError when none could be loaded."""
    lib, lib_dir = _ggml()
    files = variant_files(lib_dir)
    wanted = os.environ.get(VARIANT_ENV)
    if wanted and not files:
        raise BackendError(f"{VARIANT_ENV}={wanted!r}: this llama-cpp-python build ({lib_dir}) "
                           "has its CPU backend linked in, no run-time variants to choose from")
    if lib.ggml_backend_reg_count() > 0:
        return registered_backends()
    if wanted:
        if wanted not in files:
            raise BackendError(f"{VARIANT_ENV}={wanted!r}: no libggml-cpu-{wanted}.so in "
                               f"{lib_dir}; this build has {sorted(files) or 'none'}")
        if not lib.ggml_backend_load(str(files[wanted]).encode()):
            raise BackendError(f"{VARIANT_ENV}={wanted!r}: ggml refused {files[wanted]} "
                               "(this processor lacks the variant's instructions)")
    else:
        lib.ggml_backend_load_all_from_path(str(lib_dir).encode())
    names = registered_backends()
    if not names:
        raise BackendError(f"no ggml backend could be loaded from {lib_dir} (files: "
                           f"{sorted(p.name for p in lib_dir.glob('libggml*'))})")
    return names


def loaded_cpu_library() -> str | None:
    """File name of the CPU backend mapped into this process (Linux: /proc/self/maps)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    names = {Path(line.split()[-1]).name for line in maps.splitlines()
             if "libggml-cpu" in line and line.split()[-1].startswith("/")}
    return sorted(names)[0] if names else None


class _Feature(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("value", ctypes.c_char_p)]


def cpu_features() -> dict[str, str]:
    """What the loaded CPU backend was compiled with ({"AVX512": "1", ...}), from its
    `ggml_backend_get_features`."""
    lib, _ = _ggml()
    for i in range(lib.ggml_backend_reg_count()):
        reg = lib.ggml_backend_reg_get(i)
        if lib.ggml_backend_reg_name(reg) != b"CPU":
            continue
        addr = lib.ggml_backend_reg_get_proc_address(reg, b"ggml_backend_get_features")
        if not addr:
            return {}
        fn = ctypes.CFUNCTYPE(ctypes.POINTER(_Feature), ctypes.c_void_p)(addr)
        feats, out, j = fn(reg), {}, 0
        while feats[j].name:
            out[feats[j].name.decode()] = feats[j].value.decode()
            j += 1
        return out
    return {}


def build_info() -> dict[str, Any]:
    """The llama.cpp build this interpreter runs and the CPU backend it loads here."""
    import llama_cpp

    _, lib_dir = _ggml()
    load_backends()
    base = ctypes.CDLL(str(lib_dir / "libggml-base.so"))
    base.ggml_version.restype = base.ggml_commit.restype = ctypes.c_char_p
    files = variant_files(lib_dir)
    loaded = loaded_cpu_library()
    variant = next((v for v, p in files.items() if p.name == loaded), None)
    return {"llama_cpp_python": llama_cpp.__version__,
            "ggml_version": base.ggml_version().decode(),
            "ggml_commit": base.ggml_commit().decode(),
            "backend_dl": bool(files), "cpu_variants": sorted(files),
            "cpu_backend": loaded, "cpu_variant": variant,
            "cpu_variant_forced": os.environ.get(VARIANT_ENV) or None,
            "cpu_features": cpu_features(),
            "system_info": llama_cpp.llama_print_system_info().decode().strip()}


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv == ["--info"]:
        print(json.dumps(build_info(), sort_keys=True))
        return
    names = load_backends()
    lib = loaded_cpu_library()
    print(f"agentic_rag.llm.launch: backends {names}, CPU backend {lib or 'linked in'}",
          file=sys.stderr, flush=True)
    from llama_cpp.server.__main__ import main as serve

    sys.argv = [sys.argv[0], *argv]
    serve()


if __name__ == "__main__":
    main()
