"""A finished run folder logged to MLflow: one experiment per spec, one run per summary row with
the config's overrides as params and every figure and CI bound as metrics.

Spec hash and commit are tags; the folder's summary.csv, plots and best-config.yaml are
artifacts. It reads only the folder, so an old run can be logged as well as a new one
(`agentic-rag mlflow-log RUN_DIR`; `sweep`, `claims`, `agent-eval` and `tune` take `--mlflow`).

The default store is a SQLite file, `experiments/mlflow.db` (artifacts beside it in
`experiments/mlartifacts/`); `make mlflow` opens its UI. MLflow refuses `@` in a metric name, so
`ndcg@10` is logged as `ndcg_at_10` (`mlflow_name`). A folder already logged to the store is
not logged twice. A store that cannot be reached (a closed port, a bad URI) fails no run: the
command says so once, names the folder to log later, and keeps every file.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

DEFAULT_URI = "sqlite:///experiments/mlflow.db"
ARTIFACTS = ("summary.csv", "best-config.yaml", "spec.yaml", "meta.json", "summary.md")
RUN_FOLDER_TAG = "agentic_rag.run_folder"
ROW_TAG = "agentic_rag.row"
_CI = re.compile(r"^\s*\[\s*([^,\]]+)\s*,\s*([^\]]+)\]\s*$")  # agent-eval's "[0.37, 0.70]"
# agent-eval's paired differences: "-0.03 [-0.10, +0.00] (n=30)"
_DIFF = re.compile(r"^\s*([+\-]?[\d.]+(?:e[+\-]?\d+)?)\s*\[\s*([^,\]]+)\s*,\s*([^\]]+)\]")
_BAD = re.compile(r"[^\w.\- :/]")  # what MLflow refuses in a metric, param or tag name


class MlflowUnavailable(RuntimeError):
    """The tracking store could not be reached or written; the run folder is untouched."""


def mlflow_name(column: str) -> str:
    """A summary column as an MLflow name: `ndcg@10` → `ndcg_at_10` (MLflow allows letters,
    digits, `_ - . : /` and spaces); other refused characters become `_`."""
    return _BAD.sub("_", column.replace("@", "_at_"))


def row_metrics(row: pd.Series) -> dict[str, float]:
    """A summary row's figures: every finite number; a `[low, high]` string (agent-eval's CI
    columns, `correct_ci`) as `<metric>_ci_low` / `<metric>_ci_high`; a `value [low, high]`
    string (its paired differences, `correct_vs_closed`) as the value and its bounds. Flags
    (baseline, pareto), names, JSON distributions and empty cells are not metrics."""
    out: dict[str, float] = {}
    for col, value in row.items():
        if pd.api.types.is_bool(value):
            continue
        if isinstance(value, str):
            ci, diff = _CI.match(value), _DIFF.match(value)
            if ci and col.endswith("_ci"):
                out |= _finite({f"{col[:-3]}_ci_low": ci[1], f"{col[:-3]}_ci_high": ci[2]})
            elif diff:
                out |= _finite({col: diff[1], f"{col}_ci_low": diff[2], f"{col}_ci_high": diff[3]})
            continue
        out |= _finite({col: value})
    return out


def _finite(figures: dict[str, Any]) -> dict[str, float]:
    """The finite ones, under their MLflow names."""
    numbers = {mlflow_name(str(k)): _number(v) for k, v in figures.items()}
    return {k: v for k, v in numbers.items() if v is not None}


def naming(row: pd.Series) -> dict[str, str]:
    """The columns that name a row rather than measure it: its text that is no figure, CI,
    distribution or empty cell (agent-eval's dataset, split, cell; a conversation study's
    split, group, mode; a sweep's config_id and config label)."""
    return {str(c): v for c, v in row.items() if isinstance(v, str) and v.strip()
            and v.lower() != "nan" and not v.lstrip().startswith(("[", "{"))
            and not _DIFF.match(v) and "(n=" not in v}  # "– (n=0)": a difference with no pairs


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def read_folder(run_dir: str | Path) -> dict[str, Any]:
    """What is logged from a run folder: its summary, the spec's name, hash and per-config
    overrides (from spec.yaml), the commit (meta.json) and the artifact files."""
    from agentic_rag.experiments.spec import SweepSpec

    run_dir = Path(run_dir)
    if not (run_dir / "summary.csv").exists():
        raise FileNotFoundError(f"{run_dir}: no summary.csv (not a finished run folder)")
    summary = pd.read_csv(run_dir / "summary.csv")
    meta = _json(run_dir / "meta.json")
    overrides: dict[str, dict[str, Any]] = {}
    name, spec_hash = None, meta.get("spec_hash") or _json(run_dir / "status.json").get("spec_hash")
    if (run_dir / "spec.yaml").exists():
        spec = SweepSpec.load(run_dir / "spec.yaml")
        name, spec_hash = spec.name, spec_hash or spec.spec_hash()
        labels = dict(zip(summary.get("config_id", []), summary.get("config", [])))
        for i, (label, over) in enumerate(spec.configs_overrides()):
            cid = f"c{i:02d}"
            if cid in labels and labels[cid] != label:
                raise ValueError(f"{run_dir}/summary.csv: {cid} is {labels[cid]!r} but "
                                 f"spec.yaml's {cid} is {label!r}: not this spec's summary")
            overrides[cid] = over
    plots = sorted(p for p in run_dir.glob("*.png"))
    return {"dir": run_dir, "summary": summary, "name": name or run_dir.name,
            "spec_hash": spec_hash, "commit": meta.get("git_commit"), "dataset": meta.get("dataset"),
            "overrides": overrides,
            "artifacts": [run_dir / a for a in ARTIFACTS if (run_dir / a).exists()] + plots}


def _json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def row_params(row: pd.Series, overrides: dict[str, dict[str, Any]]) -> dict[str, str]:
    """A summary row's params: its config's overrides (a sweep with its spec.yaml), else its
    naming columns (`naming`; a config label stays a tag)."""
    over = overrides.get(str(row.get("config_id")), None)
    if over is not None:
        params = {k: json.dumps(v) if isinstance(v, list | dict) else str(v)
                  for k, v in over.items()}
        return {"config_id": str(row["config_id"]), **params}
    return {mlflow_name(k): v[:6000] for k, v in naming(row).items() if k != "config"}


def row_name(row: pd.Series, folder: str) -> str:
    """The MLflow run's name: the config id and label, or the folder's name and the naming
    columns (`agent-v7 python-faq test closed_book:native`)."""
    if "config_id" in row:
        return f"{row['config_id']} {row.get('config', '')}".strip()[:250]
    return " ".join([folder, *naming(row).values()])[:250]


def quiet_mlflow() -> None:
    """No usage data leaves the machine: MLflow's telemetry (which, when `mlflow` is first
    imported, starts a thread that calls MLflow's servers) is turned off unless the user set
    MLFLOW_DISABLE_TELEMETRY themselves. Called before the first import of mlflow."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")


def check_store(uri: str, timeout_s: float = 5.0) -> None:
    """Raise `MlflowUnavailable` naming the URI when the store cannot be reached: an HTTP
    server that does not answer as MLflow does within `timeout_s`, or a SQLite file whose
    folder cannot be made. MLflow's own client retries a dead server for minutes."""
    if uri.startswith(("http://", "https://")):
        import requests

        url = uri.rstrip("/") + "/api/2.0/mlflow/experiments/search?max_results=1"
        try:
            reply = requests.get(url, timeout=timeout_s)
        except requests.RequestException as exc:
            raise MlflowUnavailable(f"MLflow at {uri} is unreachable "
                                    f"({type(exc).__name__})") from None
        if reply.status_code != 200:
            raise MlflowUnavailable(f"{uri} does not answer as an MLflow tracking server "
                                    f"(HTTP {reply.status_code} from {url})")
    elif uri.startswith("sqlite:///"):
        path = Path(uri.removeprefix("sqlite:///"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MlflowUnavailable(f"{uri}: cannot make {path.parent} ({exc})") from None
    elif "://" not in uri and ":" not in uri:
        raise MlflowUnavailable(f"{uri!r} is not a tracking URI: use sqlite:///FILE.db, "
                                "http://HOST:PORT or file:///FOLDER")


def _artifact_location(uri: str, experiment: str) -> str | None:
    """Beside a SQLite store: `<its folder>/mlartifacts/<experiment>` (MLflow's own default is
    ./mlruns in whatever folder the command ran from); a server decides its own."""
    if not uri.startswith("sqlite:///"):
        return None
    folder = Path(uri.removeprefix("sqlite:///")).resolve().parent / "mlartifacts" / experiment
    return folder.as_uri()


def log_run_folder(run_dir: str | Path, uri: str = DEFAULT_URI, experiment: str | None = None,
                   log: Callable[[str], Any] = print, extra: Iterable[Path] = ()) -> list[str]:
    """Log one finished run folder to the MLflow store at `uri`; returns the MLflow run ids,
    one per summary row, in its order (the ones logged before, if this folder was).
    `experiment`: default the spec's name (a folder without spec.yaml: its own name);
    `extra`: more files to attach to every run (tune's best-config.yaml and report.md).
    Raises `MlflowUnavailable`."""
    quiet_mlflow()
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    folder = read_folder(run_dir)
    folder["artifacts"] += [Path(p) for p in extra if Path(p).exists()]
    check_store(uri)
    name = experiment or folder["name"]
    try:
        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(name)
        exp_id = found.experiment_id if found else client.create_experiment(
            name, artifact_location=_artifact_location(uri, name),
            tags={"mlflow.experimentKind": "custom_model_development"})  # not a GenAI one
        done = client.search_runs([exp_id], f"tags.`{RUN_FOLDER_TAG}` = '{folder['dir'].name}'",
                                  max_results=1000)
        if done:
            log(f"mlflow: {folder['dir']} is already in experiment {name!r} at {uri} "
                f"({len(done)} runs)")
            return [r.info.run_id for r in sorted(done, key=lambda r: int(r.data.tags[ROW_TAG]))]
        ids = [_log_row(client, exp_id, folder, i, row, Metric, Param, RunTag)
               for i, row in folder["summary"].iterrows()]
    except (MlflowException, OSError) as exc:
        raise MlflowUnavailable(f"MLflow at {uri}: {exc}".splitlines()[0]) from None
    log(f"mlflow: {len(ids)} runs of {folder['dir'].name} in experiment {name!r} at {uri}")
    return ids


def _log_row(client, exp_id: str, folder: dict[str, Any], i: int, row: pd.Series,  # noqa: ANN001
             Metric, Param, RunTag) -> str:  # noqa: ANN001, N803 - mlflow's entity classes
    tags = {RUN_FOLDER_TAG: folder["dir"].name, ROW_TAG: str(i),
            "agentic_rag.run_path": str(folder["dir"].resolve()),
            "spec_hash": folder["spec_hash"], "git_commit": folder["commit"],
            "mlflow.source.git.commit": folder["commit"], "dataset": folder["dataset"],
            **{c: str(row[c]) for c in ("config", "baseline", "pareto") if c in row}}
    run = client.create_run(exp_id, run_name=row_name(row, folder["dir"].name),
                            tags={k: str(v) for k, v in tags.items() if v is not None})
    run_id = run.info.run_id
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in row_metrics(row).items()]
    params = [Param(k, v[:6000]) for k, v in row_params(row, folder["overrides"]).items()]
    for start in range(0, max(len(metrics), 1), 1000):  # MLflow's batch limit
        client.log_batch(run_id, metrics=metrics[start:start + 1000],
                         params=params if start == 0 else [])
    for path in folder["artifacts"]:
        client.log_artifact(run_id, str(path), artifact_path="run_folder")
    client.set_terminated(run_id)
    return run_id


def log_folders(run_dirs: Iterable[str | Path], uri: str | None = None,
                log: Callable[[str], Any] = print, extra: Iterable[Path] = (),
                experiment: str | None = None) -> dict[Path, list[str]] | None:
    """Log each finished folder (see `log_run_folder`); the edge the commands call after a
    run. An unreachable or unwritable store is said once, naming the folders to log later with
    `agentic-rag mlflow-log`, and returns None: the run and its folders are kept as they are."""
    uri = DEFAULT_URI if uri in (None, "", "default") else uri
    dirs, extra = [Path(d) for d in run_dirs], list(extra)
    out: dict[Path, list[str]] = {}
    for d in dirs:
        try:
            out[d] = log_run_folder(d, uri, experiment, log=log, extra=extra)
        except (OSError, ValueError) as exc:  # a folder it cannot read: said, the others go on
            log(f"mlflow: {d} not logged: {exc}")
        except MlflowUnavailable as exc:
            left = dirs[len(out):]
            log(f"mlflow: not logged: {exc}. The run is kept; log it later with: agentic-rag "
                f"mlflow-log {' '.join(str(p) for p in left)} --mlflow URI")
            return None
    return out

