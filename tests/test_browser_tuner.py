"""The tuner notebook in a real browser: `make lab`'s JupyterLab, driven in headless Chromium.

notebooks/08-tune-and-export.ipynb shows the tuner's sliders where a frontend can draw them
and calls `Tuner.score` plainly under nbmake / papermill (`replay.notebook_frontend`). The
fast tests check that switch in a kernel run headless as nbmake runs it, and in one started
the way a Jupyter server starts a notebook's kernel. The slow test is what a user does:
JupyterLab is started by the command `make lab` runs (read from `make -n lab`), the
notebook is opened in Debian's chromium (driven by Playwright, which downloads no browser)
and run, a slider is dragged, and the scores shown must change; JupyterLab must not ask about
Jupyter news (the machines have no network). The committed notebook is left as it was."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .fakes import free_port

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08-tune-and-export.ipynb"
PROBE = "from agentic_rag.experiments.replay import notebook_frontend\nprint(notebook_frontend())"


def _run_headless(env: dict[str, str]) -> str:
    """Execute the probe in a fresh ipykernel through nbclient (what nbmake and papermill use)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PROBE)])
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:  # the kernel inherits this process's environment
        NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return nb.cells[0].outputs[0]["text"].strip()


def test_no_frontend_under_nbclient_or_plain_python():
    env = {k: v for k, v in os.environ.items() if k != "JPY_SESSION_NAME"}
    assert _run_headless(env) == "False"
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                         check=True).stdout.strip()
    assert out == "False"


def test_frontend_in_a_kernel_a_jupyter_server_started_for_a_notebook():
    # jupyter_server's SessionManager starts a notebook's kernel with JPY_SESSION_NAME=<path>
    assert _run_headless({**os.environ, "JPY_SESSION_NAME": str(NOTEBOOK)}) == "True"


# ---- the browser ------------------------------------------------------------------------------
def _chromium() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("Debian's chromium is not installed and could not be: `make test` installs it "
                    "with apt-get when run as root (`apt-get install -y chromium`)")
    return path


def _lab_command(port: int, token: str) -> str:
    """The shell command `make lab` runs, with a port, a token and no browser of its own."""
    args = f"--no-browser --IdentityProvider.token={token}" + (" --allow-root" if os.geteuid() == 0 else "")
    out = subprocess.run(["make", "-n", "--no-print-directory", "lab", f"LAB_PORT={port}",
                          f"LAB_ARGS={args}"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    start = out.rfind("cd notebooks")
    assert start >= 0 and "jupyter lab" in out[start:], f"`make -n lab` printed no lab command:\n{out}"
    return out[start:]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    pytest.fail(f"jupyter lab did not answer {url} in {timeout:.0f}s:\n{log.read_text()[-3000:]}")


def _user_settings(settings_dir: Path) -> None:
    """This test's own JupyterLab user settings: no autosave (the committed notebook stays as it
    is) and every cell kept in the page (no windowing), so the page can be read."""
    for plugin, values in {"docmanager-extension/plugin": {"autosave": False},
                           "notebook-extension/tracker": {"windowingMode": "none"}}.items():
        path = settings_dir / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _output_table(output) -> dict[str, str]:  # noqa: ANN001 - a Playwright locator
    """The tuner's result table (metric → value) as shown in its Output widget."""
    rows = output.locator("table tbody tr")
    return {rows.nth(i).locator("th").inner_text().strip(): rows.nth(i).locator("td").inner_text().strip()
            for i in range(rows.count())}


@contextlib.contextmanager
def lab_page(tmp_path: Path, notebook: str) -> Iterator[tuple[Any, str]]:
    """JupyterLab started as `make lab` starts it (this test's own settings: no autosave, no
    windowing), and a headless Chromium page: yields (page, the URL that opens `notebook`).
    On an error the page's screenshot is left in `tmp_path`; the server is shut down after."""
    chromium = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[notebooks]'")
    port, token = free_port(), "browser-test-" + os.urandom(8).hex()
    settings = tmp_path / "lab-user-settings"
    _user_settings(settings)
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime")}
    env.pop("JPY_SESSION_NAME", None)
    log = tmp_path / "lab.log"
    with open(log, "w") as out:
        lab = subprocess.Popen(["bash", "-c", _lab_command(port, token)], cwd=ROOT, env=env,
                               stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(f"{base}/api/status?token={token}", lab, log)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=["--no-sandbox", "--disable-dev-shm-usage"])
            try:
                page = browser.new_page(viewport={"width": 1600, "height": 1000})
                try:
                    yield page, f"{base}/lab/tree/{notebook}?token={token}&reset"
                except BaseException:
                    page.screenshot(path=str(tmp_path / "jupyterlab.png"))  # what the page showed
                    raise
            finally:
                browser.close()
    finally:
        try:
            req = urllib.request.Request(f"{base}/api/shutdown?token={token}", method="POST")
            urllib.request.urlopen(req, timeout=10).close()
            lab.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            os.killpg(lab.pid, signal.SIGTERM)
            lab.wait(timeout=30)


@pytest.mark.slow
def test_tuner_sliders_in_jupyterlab_change_the_scores(tmp_path):
    original = NOTEBOOK.read_bytes()
    try:
        with lab_page(tmp_path, NOTEBOOK.name) as (page, url):
            _run_and_tune(page, url)
    finally:
        changed = NOTEBOOK.read_bytes() != original
        if changed:
            NOTEBOOK.write_bytes(original)
        shutil.rmtree(NOTEBOOK.parent / ".ipynb_checkpoints", ignore_errors=True)
    assert not changed, f"JupyterLab wrote {NOTEBOOK.name} (restored): autosave should be off here"


def _kernel_ready(page, timeout: float = 180) -> None:  # noqa: ANN001 - a Playwright page
    """Wait for the notebook's kernel to be idle. On a loaded machine JupyterLab may open the
    notebook before it has the list of kernels and ask which to start: pick the notebook's own,
    as a user would."""
    idle = page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\(ipykernel\) \| Idle$"))
    deadline = time.monotonic() + timeout
    while idle.count() == 0:
        assert time.monotonic() < deadline, "the notebook's kernel did not start"
        dialog = page.locator(".jp-Dialog")
        if dialog.count() and "Select Kernel" in dialog.first.inner_text():
            dialog.locator("select").select_option(label="Python 3 (ipykernel)")
            dialog.locator("button.jp-mod-accept").click()
        time.sleep(1)


def _run_and_tune(page, url: str) -> None:  # noqa: ANN001 - a Playwright page
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.goto(url)
    notebook = page.locator(".jp-NotebookPanel .jp-Notebook").first
    notebook.wait_for(timeout=120_000)
    _kernel_ready(page)
    prompts = notebook.locator(".jp-CodeCell .jp-InputPrompt")
    for _ in range(4):  # Run > Run All Cells, as a user would (again if a click was lost)
        dialog = page.locator(".jp-Dialog")
        assert dialog.count() == 0, f"JupyterLab shows a dialog: {dialog.first.inner_text()[:1000]}"
        page.locator(".lm-MenuBar-item", has_text=re.compile(r"^Run$")).click()
        page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
        try:
            page.wait_for_function("() => { const p = document.querySelector("
                                   "'.jp-CodeCell .jp-InputPrompt'); return p && p.innerText.trim() !== '[ ]:' }",
                                   timeout=30_000)
            break
        except PlaywrightTimeout:
            continue
    else:
        pytest.fail("Run > Run All Cells started no cell")
    deadline = time.monotonic() + 900
    while True:  # every code cell has run once it shows an execution count
        texts = prompts.all_inner_texts()
        if texts and all(re.fullmatch(r"\[\d+\]:", t.strip()) for t in texts):
            break
        assert time.monotonic() < deadline, f"the notebook did not finish running: prompts {texts}"
        time.sleep(2)
    errors = notebook.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, f"a cell raised: {errors.first.inner_text()[:2000]}"

    tuner = notebook.locator(".jp-OutputArea-output .widget-vbox").first
    tuner.wait_for(timeout=60_000)  # the sliders are there without editing INTERACTIVE
    output = tuner.locator(".widget-output")
    before = _output_table(output)
    assert before.get("k") == "10" and "ndcg@10" in before, before

    slider = tuner.locator(".widget-hslider", has=page.locator(".widget-label", has_text="cutoff k"))
    handle = slider.locator(".noUi-handle").first
    track = slider.locator(".noUi-target").first
    slider.scroll_into_view_if_needed()
    h, t = handle.bounding_box(), track.bounding_box()
    page.mouse.move(h["x"] + h["width"] / 2, h["y"] + h["height"] / 2)
    page.mouse.down()
    page.mouse.move(t["x"] + 1, h["y"] + h["height"] / 2, steps=10)  # to the left end: k = 1
    page.mouse.up()
    readout = slider.locator(".widget-readout").inner_text().strip()
    assert readout == "1", f"the drag left 'cutoff k' at {readout}"

    deadline = time.monotonic() + 60
    after = before
    while after.get("k") != "1":  # the kernel recomputes on the slider's change
        assert time.monotonic() < deadline, f"the scores did not follow the slider: {after}"
        time.sleep(0.5)
        after = _output_table(output)
    assert after["ndcg@10"] != before["ndcg@10"] and after["recall@10"] != before["recall@10"], \
        (before, after)
    assert float(after["recall@10"]) < float(before["recall@10"])  # 1 hit finds less than 10
    assert page.get_by_text(re.compile("Jupyter news", re.I)).count() == 0, \
        "JupyterLab asked about Jupyter news"
