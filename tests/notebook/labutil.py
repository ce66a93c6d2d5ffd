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
    """The lab never reaches for the network: no news feed and no update check on the server
    (``LabApp.news_url`` None, ``NeverCheckForUpdate``), and the page's notification settings
    say so, so it never asks "Would you like to get notified about official Jupyter news?"."""
    settings = config / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    never = "jupyterlab.handlers.announcements.NeverCheckForUpdate"
    (config / "jupyter_lab_config.json").write_text(
        json.dumps({"LabApp": {"news_url": None, "check_for_updates_class": never}}))
    notify = {"fetchNews": "false", "checkForUpdates": False}
    (settings / "notification.jupyterlab-settings").write_text(json.dumps(notify))


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
            page.wait_for_function("(el) => /\\[[0-9*]+\\]/.test(el.textContent)", arg=prompt.element_handle(),
                                   timeout=10_000 if attempt == 0 else 60_000)
            break
        except PlaywrightTimeout:
            if attempt == 1:
                raise
    page.wait_for_function("(el) => /\\[[0-9]+\\]/.test(el.textContent)", arg=prompt.element_handle(),
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
