"""Property-based pass over ``/openapi.json`` (schemathesis): no input produces a server error.

Bounded: 10 examples per operation and phase, one worker, fixed seed, against the shared live
server (whose rate limit is high). ``POST /api/runs`` examples really run in the sandbox.
Besides ``not_a_server_error`` it checks that status codes, content types, headers and
response bodies match what the OpenAPI document promises. The checks that judge which inputs
*should* be accepted are left out on purpose: run documents are read leniently (forward
compatible, docs/CONTRACT.md) and ``{}`` is schema-valid for ``POST /api/shares`` but refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Server

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,"
          "response_headers_conformance,response_schema_conformance")


def test_schemathesis_finds_no_server_error_and_no_contract_drift(live_server: Server,
                                                                  tmp_path: Path) -> None:
    cli = Path(sys.executable).with_name("schemathesis")
    cmd = [str(cli), "run", f"{live_server.url}/openapi.json", "--checks", CHECKS, "--max-examples", "10",
           "--seed", "20261122", "--generation-database", "none", "--workers", "1",
           "--request-timeout", "30", "--max-failures", "10", "--no-color"]
    env = {**os.environ, "SCHEMATHESIS_HOOKS": ""}
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-6000:]
    assert "generated" in out and " passed" in out
