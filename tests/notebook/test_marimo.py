"""The same widget in marimo (``mo.ui.anywidget``): a marimo app started by the test on a free
loopback port runs a recording and shows it; the test sees the nodes drawn, steps with the
keyboard and clicks a node, and the app's next cell, re-run by marimo, reads ``w.value``
(marimo's view of the widget's state) and shows the selection."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import free_port
from pageguard import wait_until

pytestmark = pytest.mark.browser

APP = '''
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import torch

    import gradtrace

    with gradtrace.record() as rec:
        x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = (x * x + 3 * x).sum()
        y.backward()
    w = mo.ui.anywidget(gradtrace.show(rec))
    w
    return mo, w


@app.cell
def _(mo, w):
    sel = w.value.get("_selected")
    mo.md(f"SEL {sel['name'] if sel else None} STEP {w.value.get('step')}")
    return


if __name__ == "__main__":
    app.run()
'''


def test_the_widget_in_a_marimo_app(page: Any, tmp_path: Path, widget_bundles: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    port = free_port()
    env = {**os.environ, "HOME": str(tmp_path), "MARIMO_SKIP_UPDATE_CHECK": "1"}
    log = (tmp_path / "marimo.log").open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "marimo", "run", "--headless", "--no-token",
                             "--host", "127.0.0.1", "--port", str(port), "app.py"],
                            cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, (tmp_path / "marimo.log").read_text()
            assert time.monotonic() < deadline, (tmp_path / "marimo.log").read_text()
            time.sleep(0.3)
        page.set_default_timeout(60_000)
        page.goto(url + "/")
        host = page.locator(".gradtrace-widget")
        host.wait_for()
        handle = host.element_handle()
        wait_until(page, "(h) => h.dataset.ready === '1'", arg=handle)
        assert page.evaluate("(h) => h.gradtrace.index.nodes.length", handle) >= 5
        host.locator("#graph").focus()
        page.keyboard.press("Home")
        page.keyboard.press("ArrowRight")
        assert host.locator("#tl-label").inner_text().startswith("Step 1/")
        point = page.evaluate("""(h) => {
            const v = h.gradtrace;
            const vn = v.scene.view.byRef[v.index.nodes.findIndex((n) => n.name === 'x')][0];
            v.canvas.centerOn(vn); v.canvas.drawNow();
            const r = v.canvas.host.getBoundingClientRect(), cam = v.canvas.cam;
            return { x: r.left + (v.scene.x[vn] - cam.x) * cam.k, y: r.top + (v.scene.y[vn] - cam.y) * cam.k };
        }""", handle)
        page.mouse.click(point["x"], point["y"])
        page.get_by_text("SEL x STEP 1").wait_for()
    finally:
        page.screenshot(path=str(Path(__file__).resolve().parent.parent / "artifacts" / "marimo.png"))
        proc.terminate()
        proc.wait(timeout=20)
        log.close()
