"""``run_snippet``: execute a snippet under the recorder and answer with its run document.

The sandbox worker calls this inside a jailed child; it never raises for anything the snippet
does (``SystemExit`` and ``KeyboardInterrupt`` included): every ending is a status.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import linecache
import os
import random
import re
import site
import sysconfig
from collections.abc import Iterator
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from gradtrace.capture.captured import CapturedDocument
from gradtrace.capture.events import LimitReached
from gradtrace.capture.session import error_line, record

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
"""NOTE [addresses in stdout]: ``print(y.grad_fn)`` shows ``<AddBackward0 object at 0x7f…>``,
an address that differs on every run. Identical runs must give byte-identical documents (the
share id is a content hash), so object addresses in the captured text are replaced by
``0x…``; nothing else of what the snippet printed is changed."""


_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
"""The directory holding the ``gradtrace`` package (this file is ``gradtrace/capture/snippet.py``)."""


def _library_roots() -> list[str]:
    """The directories library files live in: site-packages, the standard library, and the
    directory holding gradtrace itself (each also as its real path), longest first."""
    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("purelib", "platlib", "stdlib", "platstdlib") if k in paths}
    roots |= set(site.getsitepackages()) | {_PACKAGE_PARENT}
    roots |= {os.path.realpath(r) for r in roots}
    return sorted({r.rstrip("/") + "/" for r in roots if r and r != "/"}, key=len, reverse=True)


_LIBRARY_PATHS = re.compile("|".join(re.escape(r) for r in _library_roots()))
"""NOTE [library paths in text]: a traceback the snippet prints (``traceback.print_exc()``), a
warning torch writes to stderr, or an exception's message names library files by the
service's install paths (``/srv/.venv/lib/python3.11/site-packages/torch/_tensor.py``). What
the user sees names them relative to their package (``torch/_tensor.py``, ``json/decoder.py``):
the service's layout is none of the user's business, and identical runs on differently
installed workers then give identical documents."""


def library_relative(text: str) -> str:
    """``text`` with library paths relative to their package (NOTE [library paths in text])."""
    return _LIBRARY_PATHS.sub("", text)


class OutputLimit(BaseException):
    """Raised by the captured stdout when the snippet printed more than allowed."""


class CappedOutput(io.TextIOBase):
    """stdout (and stderr) of the snippet: kept up to ``limit`` bytes, then the run stops.

    The text is cut on a character boundary and ends with a marker line, as docs/CONTRACT.md promises.
    """

    MARKER = "\n[gradtrace: output cut at {limit} bytes]\n"

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[str] = []
        self._bytes = 0
        self.truncated = False

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not isinstance(s, str):
            raise TypeError(f"write() argument must be str, not {type(s).__name__}")
        if self.truncated:
            raise OutputLimit()
        data = s.encode("utf-8", "replace")
        room = self.limit - self._bytes
        if len(data) <= room:
            self._parts.append(s)
            self._bytes += len(data)
            return len(s)
        self._parts.append(data[:room].decode("utf-8", "ignore"))
        self._bytes = self.limit
        self.truncated = True
        raise OutputLimit()

    def text(self) -> str:
        body = library_relative(_ADDRESS.sub(" at 0x…", "".join(self._parts)))
        return body + self.MARKER.format(limit=self.limit) if self.truncated else body


def _namespace() -> dict[str, Any]:
    return {"__name__": "__main__", "__builtins__": builtins, "torch": torch, "nn": nn, "F": F}


def _seed(seed: int | None, device: str) -> None:
    if seed is None:
        return
    random.seed(seed)
    torch.manual_seed(seed)
    if device == "cuda":
        torch.cuda.manual_seed_all(seed)


@contextlib.contextmanager
def _process_defaults() -> Iterator[None]:
    """Put back torch's process-wide defaults that a snippet may change.

    NOTE [a snippet leaves no defaults behind]: in the sandbox a snippet runs in a fresh
    process, but ``run_snippet`` also runs in the caller's (the tests, ``gradtrace run``). A
    snippet's ``torch.set_default_dtype(torch.float64)`` or ``torch.set_grad_enabled(False)``
    must not turn the next run's tensors into float64 or stop its graph.
    """
    dtype, grad, anomaly = torch.get_default_dtype(), torch.is_grad_enabled(), torch.is_anomaly_enabled()
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        torch.set_anomaly_enabled(anomaly)


def run_snippet(code: str, *, device: str = "cpu", seed: int | None = 0,
                max_nodes: int = 50_000, max_events: int = 200_000,
                output_bytes: int = 64 * 1024, filename: str = "<snippet>",
                max_document_bytes: int = 28 << 20, native: bool | None = None,
                analysis: bool = True, tensor_budget: int | None = None,
                dynamics: bool = True) -> CapturedDocument:
    """Execute ``code`` while recording, and answer with its run document as capture's one
    exit (NOTE [capture's one exit] in capture/captured.py).

    ``torch``, ``nn`` and ``F`` are predefined. The document (``.fields``: without its id, the
    graph and the events their JSON as the core wrote it) validates as
    :class:`gradtrace.schema.RunDocument` (dumped by alias: events carry ``"pass"``) once given
    its id (``.canonical_with_id()``: :func:`gradtrace.schema.document_id`). Statuses: ``ok``,
    ``error`` (also SyntaxError, with its line), ``graph_limit`` (nodes, events, or the
    document's estimated size past ``max_document_bytes``: keep it under the sandbox's result
    cap), ``output_limit``. ``native`` chooses the kernel set: the C++ core or its Python twin
    (default: the core when built). Without ``analysis`` the document has no ``analysis`` (the
    sandbox child's: the web process adds it). ``tensor_budget`` (bytes; None: none) keeps the
    run's tensors in a safetensors file (docs/CONTRACT.md, "The tensor file"), whose bytes the
    answer carries (``.tensors``) beside the document that names them. ``dynamics``: as
    :class:`~gradtrace.capture.session.record`'s.
    """
    out = CappedOutput(output_bytes)
    fields: dict[str, Any] = {"device": device, "code": code, "seed": seed, "analysis": analysis}
    namespace = _namespace()
    rec = record(max_nodes=max_nodes, max_events=max_events, max_document_bytes=max_document_bytes,
                 native=native, _filename=filename, _namespace=namespace, _fresh=True,
                 _stop_program=True, tensor_budget=tensor_budget, dynamics=dynamics)
    try:
        compiled = compile(code, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as e:
        line = e.lineno if isinstance(e, SyntaxError) else None
        msg = e.msg if isinstance(e, SyntaxError) else str(e)
        with rec:
            pass
        rec.status = "error"
        rec.error = {"type": type(e).__name__, "message": msg, "line": line}
        return _finish(rec, fields, out)
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    _seed(seed, device)
    # torch.device(...) as a context restores the previous default device afterwards; on cpu
    # nothing is pushed at all (a default-device mode would sit in front of every torch call).
    device_ctx = torch.device(device) if device != "cpu" else contextlib.nullcontext()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), device_ctx, _process_defaults():
        try:
            with rec:
                exec(compiled, namespace)
        except OutputLimit:
            rec.status = "output_limit"
            fields["message"] = f"the snippet printed more than {output_bytes:,} bytes"
        except LimitReached:
            rec.status = "graph_limit"
        except BaseException:
            pass  # already recorded by record.__exit__
    return _finish(rec, fields, out)


def _utf8(text: str) -> str:
    """``text`` as valid UTF-8: a lone surrogate (``print("\\ud800")``) becomes ``?``.

    JSON documents are UTF-8; one unpaired surrogate in what the snippet printed or raised
    must not cost the user the whole run.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _finish(rec: record, fields: dict[str, Any], out: CappedOutput) -> CapturedDocument:
    fields = dict(fields, stdout=_utf8(out.text()), stdout_truncated=out.truncated, code=_utf8(fields["code"]))
    if rec.error is not None:
        rec.error = {k: _utf8(library_relative(v)) if isinstance(v, str) else v for k, v in rec.error.items()}
    if rec.status == "output_limit" and rec.error is not None and rec.error["type"] == "OutputLimit":
        rec.error = None
    return rec._captured(**fields)


__all__ = ["error_line", "run_snippet"]
