"""The front end's predict-mode test (frontend/test/predict.test.js) covers every op of the
Explain catalogue that the lessons record; it reads the catalogue from a fixture, which must be
the catalogue itself."""

from __future__ import annotations

import json
from pathlib import Path

from gradtrace.analysis.explain.node import BACKWARD_RULES

FIXTURE = Path(__file__).resolve().parents[2] / "frontend" / "test" / "fixtures" / "explain_catalogue.json"


def test_the_fixture_is_the_explain_catalogue() -> None:
    assert json.loads(FIXTURE.read_text(encoding="utf-8")) == sorted(BACKWARD_RULES), (
        "regenerate: python -c \"import json; from gradtrace.analysis.explain.node import BACKWARD_RULES; "
        f"json.dump(sorted(BACKWARD_RULES), open('{FIXTURE}', 'w'), indent=0)\"")
