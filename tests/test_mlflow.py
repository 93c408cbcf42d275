"""Sweeps in MLflow (experiments/mlflow_log.py): the figures read back through MLflow's own
client equal summary.csv; a folder is logged once; an unreachable store fails no run and says
so once; `sweep --mlflow` logs the finished folder; and `make mlflow`'s UI, in headless
Chromium, lists the quick sweep's 18 runs with their nDCG@10.

The quick sweep's run folder is rebuilt from what the repository commits of run
20261201-124316-quick (docs/data/quick-sweep-summary.csv, docs/img/quick-sweep.png, and
experiments/quick.yaml, whose configs the summary's config labels must match)."""

from __future__ import annotations

import hashlib
import http.server
import math
import os
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

from agentic_rag.experiments.mlflow_log import (
    MlflowUnavailable,
    log_folders,
    log_run_folder,
    mlflow_name,
    row_metrics,
    row_params,
)
from agentic_rag.experiments.spec import SweepSpec

from .fakes import free_port

pytest.importorskip("mlflow", reason="pip install -e '.[mlflow]' (make install)")

ROOT = Path(__file__).resolve().parents[1]
QUICK_SUMMARY = ROOT / "docs" / "data" / "quick-sweep-summary.csv"
AGENT_RUN = ROOT / "experiments" / "agent-runs" / "agent-v7"


def quick_folder(tmp_path: Path) -> Path:
    """The quick sweep's run folder as the runner leaves it (the parts the logger reads)."""
    run_dir = tmp_path / "runs" / "20261201-124316-quick"
    run_dir.mkdir(parents=True)
    shutil.copy(QUICK_SUMMARY, run_dir / "summary.csv")
    shutil.copy(ROOT / "docs" / "img" / "quick-sweep.png", run_dir / "tradeoff.png")
    SweepSpec.load(ROOT / "experiments" / "quick.yaml").save(run_dir / "spec.yaml")
    (run_dir / "best-config.yaml").write_text("chunking:\n  max_tokens: 256\n")
    return run_dir


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> tuple[Path, str, str]:
    """The quick sweep logged by `agentic-rag sweep SPEC --mlflow URI` (run_sweep replaced by
    the folder above): (run folder, store URI, the command's output). One store for the module:
    a new SQLite store costs seconds of migrations."""
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app
    from agentic_rag.experiments import runner

    tmp_path = tmp_path_factory.mktemp("mlflow")
    run_dir = quick_folder(tmp_path)
    summary = pd.read_csv(run_dir / "summary.csv")
    spec = SweepSpec.load(run_dir / "spec.yaml")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runner, "run_sweep", lambda *a, **k: runner.SweepResult(
            run_dir=run_dir, results=pd.DataFrame(), summary=summary, spec=spec))
        res = CliRunner().invoke(app, ["sweep", str(run_dir / "spec.yaml"), "--no-plots",
                                       "--mlflow", uri])
    assert res.exit_code == 0, res.output
    return run_dir, uri, res.output


def _runs_by_row(uri: str, experiment: str) -> dict[int, object]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    exp = client.get_experiment_by_name(experiment)
    return {int(r.data.tags["agentic_rag.row"]): r
            for r in client.search_runs([exp.experiment_id], max_results=1000)}


def test_metric_names_are_ones_mlflow_accepts():
    from mlflow.utils.validation import _validate_metric_name

    columns = pd.read_csv(QUICK_SUMMARY, nrows=0).columns
    names = {mlflow_name(c) for c in columns}
    assert len(names) == len(columns)  # one-to-one
    for name in names:
        _validate_metric_name(name)  # MLflow's own check raises on a refused character
    assert mlflow_name("ndcg@10_ci_low") == "ndcg_at_10_ci_low"
    with pytest.raises(Exception, match="Names may only contain"):
        _validate_metric_name("ndcg@10")  # why the mapping exists


def test_agent_eval_ci_strings_become_bounds():
    row = pd.Series({"dataset": "python-faq", "cell": "closed_book:native", "correct": 0.5333,
                     "correct_ci": "[0.37, 0.70]", "gold_served_ci": "[nan, nan]",
                     "correct_vs_closed": "-0.03 [-0.10, +0.00] (n=30)",
                     "gold_served_vs_closed": "– (n=0)", "latency_p50_s": float("nan"),
                     "pareto": True, "iterations_dist": '{"1": 88, "2": 12}'})
    assert row_metrics(row) == {"correct": 0.5333, "correct_ci_low": 0.37, "correct_ci_high": 0.70,
                                "correct_vs_closed": -0.03, "correct_vs_closed_ci_low": -0.10,
                                "correct_vs_closed_ci_high": 0.0}
    assert row_params(row, {}) == {"dataset": "python-faq", "cell": "closed_book:native"}


def test_logged_figures_equal_summary_csv(logged):
    from mlflow.tracking import MlflowClient

    run_dir, uri, _ = logged
    ids = log_run_folder(run_dir, uri, log=lambda m: None)  # logged already: the same runs
    summary = pd.read_csv(run_dir / "summary.csv")
    spec = SweepSpec.load(run_dir / "spec.yaml")
    runs = _runs_by_row(uri, "quick")
    assert len(ids) == len(runs) == len(summary) == 18
    checked = 0
    for i, row in summary.iterrows():
        run = runs[i]
        assert run.info.run_name.startswith(f"{row['config_id']} ")
        for col, value in row.items():
            if isinstance(value, float | int) and not isinstance(value, bool) \
                    and math.isfinite(value) and col != "config_id":
                assert run.data.metrics[mlflow_name(col)] == value, (row["config_id"], col)
                checked += 1
        label, overrides = spec.configs_overrides()[i]
        assert row["config"] == label
        assert run.data.params["chunking.max_tokens"] == str(overrides["chunking.max_tokens"])
        assert run.data.params["gate.mode"] == overrides["gate.mode"]
        assert run.data.params["fusion.retrievers"] == str(overrides["fusion.retrievers"]).replace("'", '"')
        assert run.data.tags["spec_hash"] == spec.spec_hash()
        assert run.data.tags["baseline"] == str(row["baseline"])
    assert checked > 18 * 100  # every figure and its CI bounds, not a handful
    arts = {a.path for a in MlflowClient(tracking_uri=uri).list_artifacts(ids[0], "run_folder")}
    assert arts == {"run_folder/summary.csv", "run_folder/spec.yaml", "run_folder/tradeoff.png",
                    "run_folder/best-config.yaml"}
    # the artifacts sit beside the store, not in ./mlruns of wherever the test ran
    store_dir = Path(uri.removeprefix("sqlite:///")).parent
    assert (store_dir / "mlartifacts" / "quick").is_dir() and not Path("mlruns").exists()


def test_agent_eval_folder(logged):
    uri = logged[1]
    log_run_folder(AGENT_RUN, uri, experiment="agent-eval", log=lambda m: None)
    summary = pd.read_csv(AGENT_RUN / "summary.csv")
    runs = _runs_by_row(uri, "agent-eval")
    assert len(runs) == len(summary)
    for i, row in summary.iterrows():
        run = runs[i]
        assert run.info.run_name == f"agent-v7 {row['dataset']} {row['split']} {row['cell']}"
        assert run.data.params == {"dataset": row["dataset"], "split": row["split"],
                                   "cell": row["cell"]}
        low, high = (float(x) for x in row["correct_ci"].strip("[]").split(","))
        assert run.data.metrics["correct"] == row["correct"]
        assert (run.data.metrics["correct_ci_low"], run.data.metrics["correct_ci_high"]) == (low, high)


def test_an_unreadable_folder_is_said_and_the_others_logged(logged, tmp_path):
    run_dir, uri, _ = logged
    empty = tmp_path / "20261207-000000-unfinished"
    empty.mkdir()
    said: list[str] = []
    out = log_folders([empty, run_dir], uri, said.append)
    assert list(out) == [run_dir] and len(out[run_dir]) == 18
    assert said[0] == f"mlflow: {empty} not logged: {empty}: no summary.csv (not a finished run folder)"


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


class _NotMlflow(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.parametrize("kind", ["closed port", "not an MLflow server", "bad URI"])
def test_unreachable_store_fails_nothing_and_says_so_once(tmp_path, kind):
    run_dir = quick_folder(tmp_path)
    before = _digest(run_dir)
    server = None
    if kind == "closed port":
        uri = f"http://127.0.0.1:{free_port()}"
    elif kind == "not an MLflow server":
        # socketserver's, not http.server's: HTTPServer looks its host name up (seconds offline)
        server = socketserver.TCPServer(("127.0.0.1", 0), _NotMlflow)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        uri = f"http://127.0.0.1:{server.server_address[1]}"
    else:
        uri = "no-such-store"
    said: list[str] = []
    t0 = time.perf_counter()
    try:
        assert log_folders([run_dir, run_dir], uri, said.append) is None
        assert time.perf_counter() - t0 < 15  # MLflow's client retries a dead server for minutes
        assert len(said) == 1, said
        assert "not logged" in said[0] and uri in said[0] and f"mlflow-log {run_dir}" in said[0]
        assert _digest(run_dir) == before
        with pytest.raises(MlflowUnavailable):
            log_run_folder(run_dir, uri, log=said.append)
    finally:
        if server:
            server.shutdown()
            server.server_close()


def test_sweep_command_logs_the_finished_folder(logged, monkeypatch):
    """`sweep SPEC --mlflow URI` logs the run folder the sweep wrote (the fixture), once; a dead
    URI leaves the command's exit status and the folder alone."""
    from typer.testing import CliRunner

    from agentic_rag.cli.app import bare_mlflow
    from agentic_rag.cli.main import app
    from agentic_rag.experiments import runner

    run_dir, uri, output = logged
    assert "mlflow: 18 runs of 20261201-124316-quick in experiment 'quick'" in output
    assert len(_runs_by_row(uri, "quick")) == 18
    summary = pd.read_csv(run_dir / "summary.csv")
    spec = SweepSpec.load(run_dir / "spec.yaml")
    monkeypatch.setattr(runner, "run_sweep", lambda *a, **k: runner.SweepResult(
        run_dir=run_dir, results=pd.DataFrame(), summary=summary, spec=spec))
    before = _digest(run_dir)
    outputs = []
    for again in (uri, f"http://127.0.0.1:{free_port()}"):
        res = CliRunner().invoke(app, ["sweep", str(run_dir / "spec.yaml"), "--no-plots",
                                       "--mlflow", again])
        assert res.exit_code == 0, res.output
        outputs.append(res.output)
    assert "is already in experiment 'quick'" in outputs[0], outputs[0]
    assert outputs[1].count("mlflow: not logged") == 1, outputs[1]
    assert len(_runs_by_row(uri, "quick")) == 18 and _digest(run_dir) == before
    # an old folder by hand: `agentic-rag mlflow-log RUN_DIR`
    res = CliRunner().invoke(app, ["mlflow-log", str(run_dir), "--mlflow", uri])
    assert res.exit_code == 0 and "is already in experiment 'quick'" in res.output, res.output
    res = CliRunner().invoke(app, ["mlflow-log", str(run_dir.parent), "--mlflow", uri])
    assert res.exit_code == 2 and "no summary.csv" in res.output, res.output
    # --mlflow alone is the default store, whatever follows it
    assert bare_mlflow(["sweep", "--mlflow", "s.yaml"]) == ["sweep", "--mlflow=default", "s.yaml"]
    assert bare_mlflow(["s.yaml", "--mlflow"]) == ["s.yaml", "--mlflow=default"]
    assert bare_mlflow(["--mlflow", "--test"]) == ["--mlflow=default", "--test"]
    assert bare_mlflow(["--mlflow", uri]) == ["--mlflow", uri]


def _folder_named(tmp_path: Path, name: str, spec_name: str) -> Path:
    """The quick sweep's folder under another folder and spec name (its own experiment), its
    first 3 configs only (enough to see the wiring, and quicker to log)."""
    src = quick_folder(tmp_path / name)
    pd.read_csv(src / "summary.csv").head(3).to_csv(src / "summary.csv", index=False)
    spec = SweepSpec.load(src / "spec.yaml").model_copy(update={"name": spec_name})
    spec.save(src / "spec.yaml")
    return src


@pytest.mark.parametrize("command", ["claims", "agent-eval", "tune"])
def test_other_commands_log_their_folders(logged, tmp_path, monkeypatch, command):
    """claims, agent-eval and tune with --mlflow log the folders their run wrote (the run
    itself replaced by folders made here): each claim's run folder under experiments/runs,
    the agent-eval run folder (experiment agent-eval), tune's dev and test sweeps with the
    tuned config attached."""
    from mlflow.tracking import MlflowClient
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    uri = logged[1]
    monkeypatch.chdir(tmp_path)
    if command == "claims":
        from agentic_rag.studies.claims import protocols

        run_dir = _folder_named(tmp_path, "experiments/runs", "claim-x")
        run_dir = run_dir.rename(tmp_path / "experiments" / "runs" / "20261207-000000-claim-x")
        ledger = pd.DataFrame([{"claim": "x", "dataset": "d", "n_queries": 1, "relative_effect": 0,
                                "ci_low": 0, "ci_high": 0, "verdict": "holds", "run": run_dir.name},
                               {"claim": "y", "dataset": "d", "n_queries": 1, "relative_effect": 0,
                                "ci_low": 0, "ci_high": 0, "verdict": "not run", "run": None}])
        monkeypatch.setattr(protocols, "run_claims", lambda *a, **k: ledger)
        args, want = ["claims", "--out", str(tmp_path / "claims")], {"claim-x": 3}
    elif command == "agent-eval":
        from agentic_rag.studies.agent_eval import run as agent_run

        (tmp_path / "agent-runs" / "agent-wiring").mkdir(parents=True)
        shutil.copy(AGENT_RUN / "summary.csv", tmp_path / "agent-runs" / "agent-wiring")
        monkeypatch.setattr(agent_run, "evaluate", lambda *a, **k: None)
        args = ["agent-eval", "--run", "agent-wiring", "--runs-dir", str(tmp_path / "agent-runs")]
        want = {"agent-eval": len(pd.read_csv(AGENT_RUN / "summary.csv"))}
    else:
        from agentic_rag.config import RAGConfig
        from agentic_rag.studies import tune as tune_module
        from agentic_rag.studies.tune_space import TuneResult

        dev, test = (_folder_named(tmp_path / s, "runs", f"tune-x-{s}") for s in ("dev", "test"))
        best = tmp_path / "best-config.yaml"
        best.write_text("provenance: {}\n")
        (tmp_path / "report.md").write_text("# tuned\n")
        paths = {"config": best, "report": tmp_path / "report.md", "plot": tmp_path / "tune.png",
                 "dev_run": dev, "test_run": test}
        monkeypatch.setattr(tune_module, "tune", lambda *a, **k: TuneResult(
            report="", config=RAGConfig(), summary=pd.DataFrame(), chosen="c01", paths=paths))
        args, want = ["tune", str(tmp_path)], {"tune-x-dev": 3, "tune-x-test": 3}
    res = CliRunner().invoke(app, [*args, "--mlflow", uri])
    assert res.exit_code == 0, res.output
    assert "mlflow: not logged" not in res.output, res.output
    client = MlflowClient(tracking_uri=uri)
    for experiment, n in want.items():
        exp = client.get_experiment_by_name(experiment)
        found = client.search_runs([exp.experiment_id], "tags.`agentic_rag.run_folder` != 'agent-v7'")
        assert len(found) == n, (experiment, res.output)
    if command == "tune":  # the tuned config travels with each sweep's runs
        arts = {a.path for a in client.list_artifacts(found[0].info.run_id, "run_folder")}
        assert {"run_folder/best-config.yaml", "run_folder/report.md"} <= arts
        assert "run_folder/tune.png" not in arts  # a file the run did not write is not made up


def test_logging_sends_no_usage_data(tmp_path):
    """MLflow's telemetry calls its servers from a thread started when mlflow is imported
    (outside pytest and CI, which it detects): off where this package imports it."""
    probe = ("from agentic_rag.experiments.mlflow_log import quiet_mlflow\n"
             "quiet_mlflow()\n"
             "import mlflow\n"
             "from mlflow.telemetry import get_telemetry_client\n"
             "from mlflow.telemetry.utils import is_telemetry_disabled\n"
             "print(is_telemetry_disabled(), get_telemetry_client())\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_CURRENT_TEST", "CI", "MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK")}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert out.split() == ["True", "None"], out  # without quiet_mlflow: False and a client


# ---- the UI ----------------------------------------------------------------------------------
def _mlflow_command(port: int, store: str) -> str:
    """The shell command `make mlflow` runs, on this test's port and store."""
    out = subprocess.run(["make", "-n", "--no-print-directory", "mlflow", f"MLFLOW_PORT={port}",
                          f"MLFLOW_STORE={store}"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    start = out.rfind("MLFLOW_DISABLE_TELEMETRY")
    assert start >= 0 and "mlflow server --host 127.0.0.1" in out[start:], out
    return out[start:]


def _wait_for(url: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    pytest.fail(f"mlflow server did not answer {url} in {timeout:.0f}s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_mlflow_ui_lists_the_quick_sweep_with_ndcg(logged, tmp_path):
    from .test_browser_tuner import _chromium

    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[notebooks]'")
    run_dir, store, _ = logged
    ids = log_run_folder(run_dir, store, log=lambda m: None)
    summary = pd.read_csv(run_dir / "summary.csv").set_index("config_id")
    from mlflow.tracking import MlflowClient

    exp_id = MlflowClient(tracking_uri=store).get_experiment_by_name("quick").experiment_id
    port, log = free_port(), tmp_path / "mlflow-server.log"
    with open(log, "w") as out:
        server = subprocess.Popen(["bash", "-c", _mlflow_command(port, store)], cwd=ROOT,
                                  stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/health", server, log)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=["--no-sandbox", "--disable-dev-shm-usage"])
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            try:
                shown = _ndcg_column(page, f"{base}/#/experiments/{exp_id}/runs")
            except BaseException:
                page.screenshot(path=str(tmp_path / "mlflow-ui.png"))
                raise
            finally:
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    assert len(shown) == len(ids) == 18
    assert shown == {cid: summary.loc[cid, "ndcg@10"] for cid in summary.index}


def _ndcg_column(page, url: str) -> dict[str, float]:  # noqa: ANN001 - a Playwright page
    """The runs table with its ndcg_at_10 column turned on (Columns > ndcg_at_10, as a user
    does): config id → the figure shown."""
    page.goto(url)
    page.get_by_text("18 matching runs").wait_for(timeout=60_000)
    page.get_by_role("button", name="Columns", exact=True).click()  # not "Show more columns"
    page.get_by_placeholder("Search columns").fill("ndcg_at_10")
    page.locator("[data-testid=column-selector-tree] .du-bois-light-tree-title",
                 has_text=re.compile(r"^ndcg_at_10$")).click()
    page.keyboard.press("Escape")
    header = page.locator(".ag-header-cell", has_text=re.compile(r"^\s*ndcg_at_10\s*$"))
    header.first.wait_for(timeout=30_000)
    col = header.first.get_attribute("col-id")
    # the table fills its new column in as it renders: wait for a figure in every row
    page.wait_for_function(
        """([col, n]) => [...document.querySelectorAll(
             `.ag-center-cols-container .ag-cell[col-id='${col}']`)]
             .filter(c => c.innerText.trim() !== '').length >= n""", arg=[col, 18],
        timeout=30_000)
    out = {}
    rows = page.locator(".ag-center-cols-container .ag-row")
    for i in range(rows.count()):
        index = rows.nth(i).get_attribute("row-index")
        name = page.locator(f".ag-pinned-left-cols-container .ag-row[row-index='{index}']").inner_text()
        cid = re.search(r"\bc\d\d\b", name).group(0)
        out[cid] = float(rows.nth(i).locator(f".ag-cell[col-id='{col}']").inner_text())
    return out
