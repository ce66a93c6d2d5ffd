"""What the user sees names library files relative to their package, never by the service's
install paths (NOTE [library paths in text] in capture/snippet.py)."""

from __future__ import annotations

import os
import site
import sys
import sysconfig
from typing import Any

CODE = """\
import traceback, json
x = torch.ones(2, requires_grad=True)
y = (x * x).sum()
y.backward()
try:
    y.backward()
except RuntimeError:
    traceback.print_exc()
try:
    json.loads("nope")
except ValueError:
    traceback.print_exc()
print(torch.__file__)
y.backward()
"""


def _install_paths() -> set[str]:
    paths = sysconfig.get_paths()
    found = {paths["purelib"], paths["stdlib"], *site.getsitepackages(), sys.prefix, sys.base_prefix}
    return {p for p in found | {os.path.realpath(p) for p in found} if p and p != "/"}


def test_tracebacks_warnings_and_errors_name_files_by_package(run: Any) -> None:
    doc = run(CODE)
    out, err = doc["stdout"], doc["error"]
    assert 'File "torch/_tensor.py", line' in out
    assert 'File "torch/autograd/__init__.py", line' in out
    assert 'File "json/decoder.py", line' in out
    assert "\ntorch/__init__.py\n" in out
    assert err["type"] == "RuntimeError" and err["line"] == 14
    for path in _install_paths():
        assert path not in out, path
        assert path not in err["message"], path
