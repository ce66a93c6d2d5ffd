"""Runs the programs of faithful_programs.py in a fresh process and writes what they did as JSON.

    python faithful_runner.py MODE OUT.json NAME...

MODE ``bare``: each program inside ``with contextlib.nullcontext():``; ``record``: inside
``with gradtrace.record():`` (the public in-process way; ``GRADTRACE_KERNELS`` picks the
kernel set); ``plain``: the program as it is, stdout and stderr in one stream, as the service
runs a snippet. One process per mode: torch and Python print many warnings once per process,
so bare and recorded runs are compared process against process, in the same order.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import linecache
import random
import sys
import textwrap
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # tests/: rundoc, imported with gradtrace
from faithful_programs import COMPILED, PROGRAMS

FILENAME = "<snippet>"


class Streams:
    """stdout and stderr of one program, each on its own and both in the order written."""

    def __init__(self) -> None:
        self.parts: list[tuple[str, str]] = []

    def stream(self, name: str) -> io.TextIOBase:
        parts = self.parts

        class _Writer(io.TextIOBase):
            def writable(self) -> bool:
                return True

            def write(self, s: str) -> int:
                parts.append((name, s))
                return len(s)

        return _Writer()

    def text(self, name: str | None = None) -> str:
        return "".join(s for n, s in self.parts if name is None or n == name)


def _numbers(t: torch.Tensor) -> Any:
    """A tensor as JSON: its kind, shape and values in float64 (complex as pairs)."""
    from torch.masked import MaskedTensor

    if isinstance(t, MaskedTensor):
        data, mask = t.get_data().detach(), t.get_mask()
        return {"kind": "masked", "mask": mask.tolist(),
                "values": torch.where(mask, data, torch.zeros_like(data)).double().tolist()}
    t = t.detach()
    if t.is_nested:
        return {"kind": "nested", "parts": [_numbers(p) for p in t.unbind()]}
    if t.device.type == "meta":
        return {"kind": "meta", "shape": list(t.shape), "dtype": str(t.dtype)}
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj())
    return {"kind": str(t.dtype), "shape": list(t.shape), "values": t.double().reshape(-1).tolist()}


def _tensors(ns: dict[str, Any]) -> dict[str, Any]:
    """Every tensor the program left in its namespace, its ``.grad``, and its modules'
    parameters' gradients."""
    out: dict[str, Any] = {}
    for name, value in list(ns.items()):
        if name.startswith("_"):
            continue
        if isinstance(value, torch.Tensor):
            with contextlib.suppress(Exception):
                out[name] = _numbers(value)
            grad = value.grad if value.is_leaf or value.retains_grad else None
            if grad is not None:
                out[f"{name}.grad"] = _numbers(grad)
        elif isinstance(value, nn.Module):
            for pname, p in value.named_parameters():
                out[f"{name}.{pname}"] = _numbers(p)
                if p.grad is not None:
                    out[f"{name}.{pname}.grad"] = _numbers(p.grad)
    return out


def run_one(name: str, code: str, mode: str) -> dict[str, Any]:
    if mode != "plain":
        code = "with __ctx__:\n" + textwrap.indent(code, "    ")
    linecache.cache[FILENAME] = (len(code), None, code.splitlines(True), FILENAME)
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F}
    rec = None
    if mode == "record":
        import gradtrace

        rec = ns["__ctx__"] = gradtrace.record()
    elif mode == "bare":
        ns["__ctx__"] = contextlib.nullcontext()
    random.seed(0)
    torch.manual_seed(0)
    streams = Streams()
    raised = None
    out_stream = streams.stream("stdout")
    err_stream = out_stream if mode == "plain" else streams.stream("stderr")
    with contextlib.redirect_stdout(out_stream), contextlib.redirect_stderr(err_stream):
        try:
            exec(compile(code, FILENAME, "exec", dont_inherit=True), ns)
        except Exception as e:
            raised = f"{type(e).__name__}: {e}"
    result: dict[str, Any] = {"stdout": streams.text("stdout"), "stderr": streams.text("stderr"),
                              "raised": raised, "tensors": _tensors(ns)}
    if rec is not None:
        try:
            # no ``catch_warnings`` here: it would make Python forget which warnings it showed
            from rundoc import record_doc

            doc = record_doc(rec)
            result["document"] = {
                "status": doc["status"], "error": doc["error"],
                "recorder_errors": doc.get("recorder_errors"),
                "functions": [n["name"] for n in doc["graph"]["nodes"] if n["kind"] == "function"],
                "saved_once": [n["name"] for n in doc["graph"]["nodes"] if n.get("saved_once")],
            }
        except Exception as e:  # the document itself failed: the test says so
            result["document"] = {"failed": f"{type(e).__name__}: {e}"}
    if name in COMPILED:
        torch._dynamo.reset()
    return result


def main() -> None:
    mode, out_path, *names = sys.argv[1:]
    results = {}
    for name in names:
        code = PROGRAMS.get(name) or COMPILED[name]
        results[name] = run_one(name, code, mode)
    Path(out_path).write_text(json.dumps(results))


if __name__ == "__main__":
    main()
