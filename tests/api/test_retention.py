"""Run retention has one home (``Services.kept_run``): ``GET /api/runs/{id}``, the page ``/r/{id}``
and sharing by ``run_id`` all stop seeing a run at the same age, and say so the same way."""

from __future__ import annotations

import sqlite3
import time

from api.helpers import CHAIN_RULE, assert_error
from conftest import running_server


def _age_run(db: str, run_id: str, days: float) -> None:
    """Move a stored run's clock back (waiting for the write behind the answer to land)."""
    deadline = time.monotonic() + 20
    while True:
        with sqlite3.connect(db, timeout=10) as conn:
            changed = conn.execute("UPDATE runs SET created_at = created_at - ? WHERE id = ?",
                                   (days * 86400.0, run_id)).rowcount
        if changed:
            return
        assert time.monotonic() < deadline, "the run was never written"
        time.sleep(0.05)


def test_an_expired_run_is_gone_from_every_route_at_once_and_a_kept_one_is_everywhere() -> None:
    with running_server({"GRADTRACE_RUN_RETENTION_DAYS": "2"}) as srv, srv.client() as api:
        old = api.post("/api/runs", json={"code": CHAIN_RULE}).json()["id"]
        kept = api.post("/api/runs", json={"code": CHAIN_RULE + "print('kept')\n"}).json()["id"]
        _age_run(str(srv.data_dir / "gradtrace.db"), old, days=3)
        _age_run(str(srv.data_dir / "gradtrace.db"), kept, days=1)

        error = assert_error(api.get(f"/api/runs/{old}"), 404, "not_found")
        assert error["message"] == f"no run with id {old!r} (runs are kept 2 days; share a run to keep it)"
        assert api.get(f"/r/{old}").status_code == 404
        error = assert_error(api.post("/api/shares", json={"run_id": old}), 404, "not_found")
        assert error["message"] == (f"no run with id {old!r} (runs are kept 2 days; "
                                    "share the document itself instead)")

        assert api.get(f"/api/runs/{kept}").json()["id"] == kept
        assert api.get(f"/r/{kept}").status_code == 200
        assert api.post("/api/shares", json={"run_id": kept}).status_code == 201
