"""Capture's and the sandbox's import rules, held by reading the source.

The layer order of the whole package and its import circles are ``tests/test_layering.py``'s.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from gradtrace.capture.build_native import SUPPORTED_TORCH, BuildError, check_torch

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "backend" / "gradtrace"


def test_the_zygote_imports_warm_up_so_a_rename_fails_loudly() -> None:
    source = (PACKAGE / "sandbox" / "zygote.py").read_text()
    assert "getattr(capture" not in source
    tree = ast.parse(source)
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "gradtrace.capture"
             for a in n.names}
    assert "warm_up" in names
    from gradtrace.capture import warm_up  # the name it imports exists

    assert callable(warm_up)


def test_no_private_fields_of_torch_hook_handles_and_no_runner_scan() -> None:
    recorder = (PACKAGE / "capture" / "recorder.py").read_text()
    assert not re.search(r"\.(hooks_dict_ref|extra_dict_ref)\b", recorder)
    services = (PACKAGE / "api" / "services.py").read_text()
    assert "importlib" not in services and "getattr(runner" not in services


def test_the_supported_torch_range_holds_the_pinned_torch_and_is_checked_at_build() -> None:
    import torch

    pin = re.search(r'"torch==(\d+\.\d+\.\d+)"', (ROOT / "pyproject.toml").read_text())
    assert pin is not None
    check_torch(pin[1])
    check_torch(str(torch.__version__))
    first, last = SUPPORTED_TORCH
    for outside in (f"{first[0]}.{first[1] - 1}.0", f"{last[0]}.{last[1]}.0+cpu", "nightly"):
        with pytest.raises(BuildError):
            check_torch(outside)


def test_the_garbage_collector_is_controlled_in_one_module() -> None:
    """NOTE [gc while building documents] and its neighbours in gradtrace/collector.py: every
    call into ``gc`` of the package is there, so a pause, a freeze or a threshold is set (and
    undone) one way only."""
    home = PACKAGE / "collector.py"
    bad = []
    for path in PACKAGE.rglob("*.py"):
        if path == home:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) else [])
            if "gc" in names:
                bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not bad, f"gc used outside gradtrace/collector.py: {bad}"
    assert "import gc" in home.read_text()
