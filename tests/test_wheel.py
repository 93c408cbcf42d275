"""The package outside the checkout: a wheel built from this checkout holds every file of
`agentic_rag/` (code and the data it reads at run time, e.g. `retrieve/calibration_default.json`),
and, installed into a fresh virtual environment, runs `agentic-rag --help`, indexes a folder
and answers a gated search, with the package imported from that environment, never from here.

No network and no dependency re-installed: the wheel is built with this venv's setuptools
(`pip wheel --no-deps --no-build-isolation --no-index`) from a copy of the sources, and the
fresh venv holds only the wheel (`pip --python FRESH install --no-deps`) plus a `.pth` line
naming this venv's site-packages as a plain path. A plain path entry does not run the `.pth`
files inside it, so the editable install's finder stays off (asserted below)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import agentic_rag

PKG = Path(agentic_rag.__file__).resolve().parent
CHECKOUT = PKG.parent
# files under agentic_rag/ that deliberately do not ship (relative to agentic_rag/); none today
NOT_SHIPPED: set[str] = set()

DOCS = {
    "install.md": "# Installing the widget\n\nRun `pip install widget` in a fresh virtual "
                  "environment.\n\n## Upgrading\n\nRun `pip install --upgrade widget` to get the "
                  "newest release.\n",
    "fees.md": "# Fees\n\n| plan | monthly fee |\n|---|---|\n| Basic | 0 USD |\n| Pro | 12 USD |\n\n"
               "The Pro plan's fee is waived for students.\n",
    "faq.md": "# FAQ\n\n## How do I reset my password?\n\nOpen Settings, choose Security, then "
              "press \"Reset password\" and follow the e-mail.\n",
}
# the gated search, run by the fresh venv's interpreter in the folder the index was built in
SEARCH = """
import json, sys
import agentic_rag
from agentic_rag.retrieve.calibration import DEFAULT_PATH
from agentic_rag.retrieve.pipeline import Pipeline

pipe = Pipeline.from_config("config.yaml")
intent, result = pipe.retrieve("How much is the Pro plan's monthly fee?")
print(json.dumps({"package": agentic_rag.__file__, "calibration": str(DEFAULT_PATH),
                  "sys_path": sys.path, "meta_path": [repr(f) for f in sys.meta_path],
                  "stop_reason": result.stop_reason, "confidence": result.confidence,
                  "sources": [h.chunk.doc_id for h in result.hits]}))
"""


def package_files(pkg: Path) -> set[str]:
    """Every file under `pkg` (a copy of agentic_rag/) a wheel must hold, as wheel entry names."""
    return {f"agentic_rag/{p.relative_to(pkg).as_posix()}" for p in pkg.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            and p.relative_to(pkg).as_posix() not in NOT_SHIPPED}


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of this checkout's sources, `<root>/src` (the build writes
    `build/` and `*.egg-info` beside its sources, never into the checkout), in `<root>/dist`."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(CHECKOUT / name, src / name)
    shutil.copytree(PKG, src / "agentic_rag", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
          "-q", "-w", str(root / "dist"), "./src"], root)
    (built,) = (root / "dist").glob("agentic_rag-*.whl")
    return built


def test_the_wheel_holds_every_file_of_the_package(wheel):
    """Code and data alike: a data file moved to another subpackage, or of a new kind, that
    pyproject.toml's package-data patterns miss fails here (~5 s: one wheel build)."""
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(package_files(wheel.parent.parent / "src" / "agentic_rag") - names)
    assert not missing, (f"the wheel lacks {missing}: a data file needs a pattern in "
                         "[tool.setuptools.package-data] of pyproject.toml (or an entry, with its "
                         "reason, in tests/test_wheel.py's NOT_SHIPPED)")
    assert "agentic_rag/retrieve/calibration_default.json" in names
    entry_points = zipfile.ZipFile(wheel).read(
        next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "agentic-rag = agentic_rag.cli.main:main" in entry_points


@pytest.mark.slow
def test_the_wheel_installed_outside_the_checkout_indexes_and_searches(wheel, tmp_path):
    """`agentic-rag --help`, `agentic-rag index` of three Markdown files and a gated search
    (calibrated confidence: the packaged calibrator file is read) in a fresh venv, with cwd
    outside the checkout (30 s of CPU, 104 s wall at load average 7-16 on 2 cores: two
    processes load the embedding model)."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
          "-q", str(wheel)], tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     tmp_path).strip())
    # the dependencies: this venv's site-packages as a plain path (its own .pth files not run)
    (site / "project-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    work = tmp_path / "work"
    (work / "docs").mkdir(parents=True)
    for name, text in DOCS.items():
        (work / "docs" / name).write_text(text)
    (work / "config.yaml").write_text("home: home\ngate:\n  mode: gated\n  confidence: calibrated\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env["HF_HUB_OFFLINE"] = "1"

    cli = str(venv / "bin" / "agentic-rag")
    assert "index" in _run([cli, "--help"], work, env)
    out = _run([cli, "index", "docs", "--config", "config.yaml"], work, env)
    assert "indexed 3 documents" in out, out
    found = json.loads(_run([str(python), "-c", SEARCH], work, env).strip().splitlines()[-1])

    assert Path(found["package"]).is_relative_to(site), found["package"]
    assert Path(found["calibration"]).is_relative_to(site) and Path(found["calibration"]).is_file()
    deps = Path(sysconfig.get_path("purelib")).resolve()  # inside the checkout's .venv
    here = [p for p in found["sys_path"] if p and Path(p).resolve() != deps
            and Path(p).resolve().is_relative_to(CHECKOUT)]
    assert not here, f"the checkout is on the fresh venv's sys.path: {here}"
    assert not any("editable" in f.lower() for f in found["meta_path"]), found["meta_path"]
    assert found["stop_reason"] != "static" and 0.0 <= found["confidence"] <= 1.0, found
    assert found["sources"][0] == "docs/fees.md", found
