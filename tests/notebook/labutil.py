"""The notebook tests' helpers: a real JupyterLab on a free loopback port, and the built
widget bundles (``frontend/dist/widget.js``, ``standalone.js``).

JupyterLab, ipykernel and anywidget come from PyPI through the ``test`` extra; the lab runs in a
throwaway home (config, data, runtime and notebooks under ``tmp_path``) so nothing of the
developer's own Jupyter set-up is read or written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from gradtrace.frontend import DIST, ROOT
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conftest import free_port
from pageguard import wait_until

LAB_START_TIMEOUT_S = 90.0


@pytest.fixture(scope="session")
def widget_bundles() -> Path:
    """``frontend/dist`` with the widget and standalone bundles, built once if missing."""
    if not (DIST / "widget.js").exists() or not (DIST / "standalone.js").exists():
        npm = shutil.which("npm")
        if npm is None or not (ROOT / "node_modules").is_dir():
            pytest.fail("frontend/dist is not built: run `make frontend` (npm ci && npm run build in frontend/)")
        subprocess.run([npm, "run", "--silent", "build"], cwd=ROOT, check=True, timeout=300)
    return DIST


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]


@contextlib.contextmanager
def running_lab(home: Path) -> Iterator[Lab]:
    """JupyterLab (``python -m jupyterlab``) serving ``home/notebooks``, without a browser, with
    its config, data and runtime under ``home``; stopped on exit. The benchmarks use it too."""
    root = home / "notebooks"
    root.mkdir(parents=True, exist_ok=True)
    _offline_settings(home / "config")
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "IPYTHONDIR": str(home / "ipython"),
           "JUPYTER_PLATFORM_DIRS": "1", "PYTHONWARNINGS": "ignore"}
    log_path = home / "lab.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
             f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--allow-root",
             "--ServerApp.port_retries=0"],
            env=env, stdout=log, stderr=subprocess.STDOUT, cwd=root)
        lab = Lab(url=f"http://127.0.0.1:{port}", token=token, root=root, process=proc, log_path=log_path)
        try:
            _wait_ready(lab)
            yield lab
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _offline_settings(config: Path) -> None:
    """A fresh lab that asks nothing (NOTE [a lab with no dialogs]).

    The lab never reaches for the network: no news feed and no update check on the server
    (``LabApp.news_url`` None, ``NeverCheckForUpdate``), and the page's notification settings
    say so, so it never asks "Would you like to get notified about official Jupyter news?". It
    never proposes a build (``page_config.json``: ``buildCheck``/``buildAvailable`` false),
    restarts a kernel without asking, and starts the notebook's kernel without a choice."""
    user = config / "lab" / "user-settings" / "@jupyterlab"
    never = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
    (config / "jupyter_lab_config.json").parent.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_lab_config.json").write_text(
        json.dumps({"LabApp": {"news_url": None, "check_for_updates_class": never}}))
    (config / "labconfig").mkdir(parents=True, exist_ok=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps({"buildCheck": False, "buildAvailable": False}))
    for plugin, values in (("apputils-extension/notification", {"fetchNews": "false", "checkForUpdates": False}),
                           ("apputils-extension/sessionDialogs", {"skipKernelRestartDialog": True}),
                           ("docmanager-extension/plugin", {"autosave": False})):
        path = user / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


DIALOG = ".jp-Dialog"


def answer_lab_dialogs(page: Any) -> list[str]:
    """Answer any JupyterLab dialog the moment it would stand in the way of an action.

    NOTE [a lab with no dialogs]
        On a fresh machine with busy cores, a ``jp-Dialog`` (its backdrop covers the page)
        took every click for 60 s. ``_offline_settings`` configures away the dialogs a fresh
        lab can show (news, update check, build, kernel restart); whatever still comes up (a
        kernel choice for a notebook whose kernel is missing, a document conflict, anything a
        later JupyterLab adds) is answered here, through Playwright's locator handler, which
        runs before every action that the dialog would block: a kernel choice is accepted (the
        preselected kernel), anything else is dismissed. The titles answered are returned
        (a list that grows) so a test can say what it met.
    """
    seen: list[str] = []

    def answer_one(dialog: Any) -> None:
        element = dialog.element_handle()
        header = dialog.locator(".jp-Dialog-header")
        title = header.first.inner_text() if header.count() else dialog.inner_text()[:80]
        seen.append(title.strip())
        kind = ".jp-mod-accept" if re.search(r"kernel", title, re.I) else ".jp-mod-reject"
        button = dialog.locator(f".jp-Dialog-button{kind}")
        if button.count():
            button.first.click()
        else:
            page.keyboard.press("Escape")
        element.wait_for_element_state("hidden", timeout=30_000)

    def answer(_overlay: Any) -> None:
        # one after another: answering one dialog may open the next (a kernel choice, twice)
        dialogs = page.locator(DIALOG)
        while dialogs.count() and dialogs.first.is_visible():
            answer_one(dialogs.first)

    page.add_locator_handler(page.locator(DIALOG).first, answer, no_wait_after=True)
    return seen


def _wait_ready(lab: Lab) -> None:
    deadline = time.monotonic() + LAB_START_TIMEOUT_S
    while True:
        if lab.process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited with {lab.process.returncode}:\n{lab.log()}")
        try:
            if httpx.get(f"{lab.url}/api/status?token={lab.token}", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"JupyterLab did not answer within {LAB_START_TIMEOUT_S} s:\n{lab.log()}")
        time.sleep(0.3)


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory: pytest.TempPathFactory, widget_bundles: Path) -> Iterator[Lab]:
    """A JupyterLab for the module's tests (one lab, one kernel per notebook)."""
    with running_lab(tmp_path_factory.mktemp("jupyter")) as lab:
        yield lab


def run_cell(page: Any, index: int) -> None:
    """Select code cell ``index``, run it with Shift+Enter, and wait until the kernel ran it
    (its prompt shows an execution count). A keypress the lab swallowed while it was still
    settling is sent once more."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    for attempt in range(2):
        cell.locator(".jp-InputArea-editor .cm-content").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            wait_until(page, "(el) => /\\[[0-9*]+\\]/.test(el.textContent)", arg=prompt.element_handle(),
                                   timeout=10_000 if attempt == 0 else 60_000)
            break
        except PlaywrightTimeout:
            if attempt == 1:
                raise
    wait_until(page, "(el) => /\\[[0-9]+\\]/.test(el.textContent)", arg=prompt.element_handle(),
                           timeout=90_000)


def cell_output(page: Any, index: int, pattern: str, timeout_ms: float = 60_000) -> str:
    out = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea-output")
    out.filter(has_text=re.compile(pattern)).first.wait_for(timeout=timeout_ms)
    return str(out.all_inner_texts())


def write_notebook(path: Path, cells: list[str]) -> None:
    """A minimal nbformat-4 notebook of code cells."""
    nb: dict[str, Any] = {
        "nbformat": 4, "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "cells": [{"cell_type": "code", "id": f"c{i}", "metadata": {}, "execution_count": None, "outputs": [],
                   "source": src} for i, src in enumerate(cells)],
    }
    path.write_text(json.dumps(nb))
