"""A tutorial loop at its full length through the real service: the polynomial fit's 2,000
iterations record whole within the default document limits and end ``ok`` with its result line,
its document (tensor keys and outputs included: the service keeps a tensor file) with a margin
under the document cap.

The server runs with generous time limits so that the document's limits are the ones in play
(a loaded machine must not turn this into a timeout); every other setting is the default."""

from __future__ import annotations

import inspect

import httpx

from conftest import Server
from gradtrace.capture.recorder import Recorder
from programs import POLY_FIT_2000

DOCUMENT_CAP = inspect.signature(Recorder.__init__).parameters["max_document_bytes"].default
"""The default cap on a run's document (NOTE [limits] in capture/recorder.py)."""

SLOW_OK = {"GRADTRACE_TIMEOUT_S": "240", "GRADTRACE_CPU_S": "240"}


def test_the_2000_iteration_polynomial_fit_ends_ok_with_its_result_line(start_server) -> None:
    with start_server(SLOW_OK) as srv:
        srv_: Server = srv
        with httpx.Client(base_url=srv_.url, timeout=300) as client:
            r = client.post("/api/runs", json={"code": POLY_FIT_2000})
    assert r.status_code == 200, r.text[:2000]
    doc = r.json()
    assert doc["status"] == "ok", (doc["status"], doc.get("message"))
    assert doc["tensors"] is not None and len(r.content) <= 0.95 * DOCUMENT_CAP, (len(r.content), DOCUMENT_CAP)
    lines = doc["stdout"].splitlines()
    assert lines[-1].startswith("Result: y = ") and lines[-2].startswith("1999 ")
    assert len(doc["passes"]) == 2000 and all(p["completed"] for p in doc["passes"])
    leaves = {n["name"]: n for n in doc["graph"]["nodes"] if n["kind"] == "tensor" and n["role"] == "leaf"}
    assert {"a", "b", "c", "d"} <= set(leaves)
    assert all(len(leaves[k]["grad_history"]) == 2000 for k in "abcd")
