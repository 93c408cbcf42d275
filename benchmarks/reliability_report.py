"""Run the reliability suite (`pytest -m reliability`) and write `benchmarks/RELIABILITY.md`.

    .venv/bin/python benchmarks/reliability_report.py [extra pytest args]

`make bench` runs it after benchmarks/bench.py. The tests record their figures with pytest's
`record_property` (faults injected, bad inputs tried, rows checked and rows lost after
kill -9, ...); this script reads them back from the JUnit XML and sums them, and says how
many tests recorded each one. A figure no test recorded is "not recorded", never a
default. Sections other scripts write into RELIABILITY.md between `<!-- NAME:begin -->` /
`<!-- NAME:end -->` markers (`serve_load.py`'s) are kept as they are. Exit code: pytest's.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from agentic_rag.experiments.runfolder import git_commit, git_dirty

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "RELIABILITY.md"

GROUPS = {"test_reliability_crash": "Crashes (kill -9 while indexing)",
          "test_reliability_llm": "LLM faults (proxy in front of the local server)",
          "test_reliability_input": "Bad input",
          "test_reliability_concurrency": "Concurrency",
          "test_reliability_security": "Security / privacy",
          "test_serve_load": "Serve under load (memory guard)"}
SUMS = {"llm_faults_injected": "LLM faults injected",
        "sweep_llm_failures_recorded": "LLM failures recorded by the faulty sweep",
        "bad_inputs_tried": "bad inputs tried",
        "kill9_rows_checked": "rows checked after kill -9 + rerun",
        "kill9_lost_rows": "rows lost after kill -9 + rerun (counted by the crash tests)",
        "concurrent_queries": "queries answered while a writer added documents",
        "concurrent_writers_rows_checked": "rows checked after two concurrent writer processes",
        "non_loopback_connections": "non-loopback connection attempts",
        "tampered_weights_refused": "tampered weight files refused",
        "files_scanned_for_key": "files scanned for the sentinel API key (the test fails on any hit)",
        "serve_load_calls": "served calls under load (16 HTTP + 2 MCP clients, 15 s)",
        "serve_load_errors": "errors among them (the test fails on any)",
        "serve_load_mismatches": "replies ≠ the same call made alone (the test fails on any)",
        "serve_503_refusals": "searches refused over the memory cap (503 / MCP error result)"}
TIMINGS = {"parse_50mb_s": "parse a 50 MB Markdown file (s)",
           "chunk_0.5mb_s": "chunk 0.5 MB of Markdown (s)",
           "chunk_2mb_s": "chunk 2 MB of Markdown (s)",
           "table_100k_rows_chunk_s": "chunk a 100k-row table (s)",
           "list_chunk_s": "chunk a numbered list, by its number of steps (s)"}


def run(args: list[str]) -> tuple[int, Path, float]:
    xml = Path(tempfile.mkdtemp()) / "reliability.xml"
    cmd = [sys.executable, "-m", "pytest", "-m", "reliability", "-q", "-p", "no:cacheprovider",
           f"--junitxml={xml}", "-o", "junit_family=xunit1", *args]
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, cwd=ROOT)
    return rc, xml, time.perf_counter() - t0


def load() -> str:
    """1-minute load average: timings on a shared 2-core machine scale with it."""
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "n/a"


def outcome(case: ET.Element) -> str:
    for tag in ("failure", "error"):
        if case.find(tag) is not None:
            return "failed"
    skip = case.find("skipped")
    if skip is not None:
        return "xfailed" if "xfail" in (skip.get("type", "") + skip.get("message", "")) else "skipped"
    return "passed"


def summarise(xml: Path) -> dict:
    groups: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    sums: dict[str, float] = defaultdict(float)
    recorded_by: dict[str, int] = defaultdict(int)  # how many tests recorded each figure
    timings: dict[str, float | str] = {}
    notes: list[str] = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")[-1]
        state = outcome(case)
        g = groups[module]
        g[state] += 1
        g["time"] += float(case.get("time", 0))
        for prop in case.iter("property"):
            name, text = prop.get("name", ""), prop.get("value", "")
            try:
                value: float | str = float(text)
            except ValueError:  # e.g. {5000: 0.03, 20000: 1.7}: shown as recorded
                value = text.strip("{}")
            if name in TIMINGS or not isinstance(value, float):
                timings[name] = value  # the last one recorded
            else:
                sums[name] += value
            recorded_by[name] += 1
        if state in ("failed", "xfailed"):
            el = case.find("failure") if state == "failed" else case.find("skipped")
            msg = (el.get("message", "") if el is not None else "").splitlines()[0][:200] \
                if el is not None and el.get("message") else ""
            notes.append(f"- {state}: `{module}::{case.get('name')}` {msg}")
    return {"groups": groups, "sums": sums, "timings": timings, "notes": notes,
            "recorded_by": recorded_by}


def render(s: dict, rc: int, wall: float, loads: tuple[str, str], commit: str,
           started: datetime) -> str:
    upstream = os.environ.get("RELIABILITY_LLM_UPSTREAM") or "llama.cpp server, SmolLM2-135M"
    lines = ["# Reliability suite", "",
             "Generated by `benchmarks/reliability_report.py` (runs `pytest -m reliability`; "
             "`make bench` runs it); do not edit by hand.", "",
             f"- started: {started:%Y-%m-%d %H:%M} UTC; commit {commit}; "
             f"{platform.platform()}, {os.cpu_count()} CPUs; Python {platform.python_version()}",
             f"- LLM upstream behind the fault proxy: {upstream}",
             f"- wall time: {wall:.0f} s (load average {loads[0]} at the start, {loads[1]} at "
             f"the end); pytest exit code {rc}", "",
             "| group | passed | failed | xfailed | skipped | time (s) |",
             "|---|---|---|---|---|---|"]
    titles = {**GROUPS, **{m: f"`{m}`" for m in sorted(set(s["groups"]) - set(GROUPS))}}
    for module, title in titles.items():
        g = s["groups"].get(module, {})
        lines.append(f"| {title} | {int(g.get('passed', 0))} | {int(g.get('failed', 0))} | "
                     f"{int(g.get('xfailed', 0))} | {int(g.get('skipped', 0))} | "
                     f"{g.get('time', 0):.1f} |")
    lines += ["", "## Figures", "",
              "Each figure is what the tests counted in this run (pytest `record_property`), "
              "summed over the tests that recorded it.", "",
              "| figure | value | tests that recorded it |", "|---|---|---|"]
    for key, label in SUMS.items():
        n = s["recorded_by"].get(key, 0)
        value = f"{s['sums'][key]:.0f}" if n else "not recorded"
        lines.append(f"| {label} | {value} | {n} |")
    for key, label in TIMINGS.items():
        if key in s["timings"]:
            v = s["timings"][key]
            shown = f"{v:.2f}" if isinstance(v, float) else v
            lines.append(f"| {label} | {shown} | {s['recorded_by'][key]} |")
    for key in sorted(set(s["recorded_by"]) - set(SUMS) - set(TIMINGS)):  # no label here yet
        v = s["timings"].get(key, s["sums"].get(key))
        shown = f"{v:.2f}" if isinstance(v, float) else v
        lines.append(f"| `{key}` | {shown} | {s['recorded_by'][key]} |")
    if s["notes"]:
        lines += ["", "## Failed and expected failures", "", *s["notes"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    before, started = load(), datetime.now(UTC)
    # the code under test is the tree at the start (others may commit during the run)
    commit = git_commit(short=True) + (" + uncommitted changes" if git_dirty() else "")
    rc, xml, wall = run(sys.argv[1:])
    if not xml.exists():
        print(f"pytest wrote no report (exit {rc})", file=sys.stderr)
        return rc or 1
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from sections import kept_sections

    kept = kept_sections(OUT)  # e.g. serve_load.py's section, written by its own script
    text = render(summarise(xml), rc, wall, (before, load()), commit, started)
    OUT.write_text(text + ("\n" + kept + "\n" if kept else ""), encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
