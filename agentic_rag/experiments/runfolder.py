"""Run folders and their metadata: the one place that names a run, finds the commit and
stamps the package versions. Sweeps, claims, cold start, the judge validation and the agent
evaluation all write their folders through it.

A run folder is `runs_dir/<UTC stamp>-<name>/`; two runs of one name within the same second
get `<stamp>.2-<name>`, which sorts after the first and still ends in `-<name>`.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

# the row cache's keys include these versions: adding a name invalidates every cached row
PACKAGES = ("agentic-rag", "chromadb", "qdrant-client", "bm25s", "sentence-transformers",
            "torch", "tiktoken", "ir-measures", "openai", "llama-cpp-python", "pandas")


def git_commit(short: bool = False) -> str:
    """The checkout's HEAD commit, or "unknown" outside a git checkout (an installed package)."""
    try:
        args = ["git", "rev-parse", *(["--short"] if short else []), "HEAD"]
        return subprocess.run(args, capture_output=True, text=True, check=True,
                              cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_dirty() -> bool | None:
    """Whether tracked files differ from HEAD (None outside a git checkout)."""
    try:
        return bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, check=True,
                                   cwd=Path(__file__).parent).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return None


def versions() -> dict[str, str]:
    """Installed versions of the packages that can change a figure."""
    out = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def base_meta() -> dict[str, Any]:
    """The fields every run's `meta.json` starts with: commit, Python, platform, packages."""
    return {"git_commit": git_commit(), "python": sys.version, "platform": platform.platform(),
            "packages": versions()}


def new_run_dir(runs_dir: str | Path, name: str) -> Path:
    """Create and return a fresh `runs_dir/<stamp>-<name>` folder (never an existing one)."""
    runs_dir = Path(runs_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    n = 1
    while True:
        run_dir = runs_dir / (f"{stamp}-{name}" if n == 1 else f"{stamp}.{n}-{name}")
        try:
            run_dir.mkdir(parents=True)
            return run_dir
        except FileExistsError:
            n += 1


def write_meta(run_dir: str | Path, meta: dict[str, Any]) -> Path:
    """Write `meta.json` as `base_meta()` overlaid with `meta` (the caller's fields win)."""
    path = Path(run_dir) / "meta.json"
    path.write_text(json.dumps({**base_meta(), **meta}, indent=2, default=str))
    return path


def mark_complete(run_dir: str | Path, **fields: Any) -> None:
    """Write `status.json` saying the run finished."""
    (Path(run_dir) / "status.json").write_text(json.dumps({**fields, "complete": True}))
