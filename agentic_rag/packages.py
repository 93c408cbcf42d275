"""Files shipped inside installed registry packages (datasets, model weights), located
without importing the package (their own dependencies are not installed), and checked
by sha256."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path


class PackageDataMissing(RuntimeError):
    """A package (or a file in it) is missing; the message says what to install."""


def package_file(package: str, relpath: str, install: str,
                 error: type[Exception] = PackageDataMissing) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise error(f"package {package!r} is not installed: run `{install}`")
    path = Path(list(spec.submodule_search_locations)[0]) / relpath
    if not path.exists():
        raise error(f"{path} is missing from {package!r}: run `{install}`")
    return path


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()
