"""The `gradtrace` command as a user types it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from conftest import free_port

ROOT = Path(__file__).resolve().parent.parent
GRADTRACE = str(Path(sys.executable).parent / "gradtrace")


def test_run_prints_the_run_document_of_a_file(tmp_path: Path) -> None:
    snippet = tmp_path / "chain.py"
    snippet.write_text("x = torch.tensor(2.0, requires_grad=True)\ny = x * x + 3 * x\ny.backward()\n")
    r = subprocess.run([GRADTRACE, "run", str(snippet)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["status"] == "ok"
    names = {n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"}
    assert {"MulBackward0", "AddBackward0", "AccumulateGrad"} <= names


def test_run_of_a_missing_file_says_so_and_exits_2(tmp_path: Path) -> None:
    r = subprocess.run([GRADTRACE, "run", str(tmp_path / "nope.py")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert "cannot read" in r.stderr and "nope.py" in r.stderr


def test_serve_starts_the_service_on_the_given_port(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GRADTRACE_")}
    env["GRADTRACE_DATA_DIR"] = str(tmp_path / "data")
    proc = subprocess.Popen([GRADTRACE, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        body = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                r = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                if r.status_code == 200:
                    body = r.json()
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert body is not None, "gradtrace serve never answered /healthz"
        assert (tmp_path / "data").is_dir()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
