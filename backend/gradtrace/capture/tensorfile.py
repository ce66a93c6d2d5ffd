"""The run's tensor file: every number kept, exactly, in a safetensors file beside the document
(docs/CONTRACT.md, "The tensor file").

NOTE [kept tensors]
    What the file holds, and how capture holds it until the document is built:
    * a function node's forward outputs (``n{id}.out{k}``): the tap (``cxx/tap.h``, its twin
      :mod:`gradtrace.capture.outputs`), by reference, copied only before a write;
    * a backward event's gradients (``e{i}.go{k}``, ``e{i}.gi{k}``, ``e{i}.grad``,
      ``e{i}.hb{k}``/``e{i}.ha{k}``): each captured value of the core keeps the tensor itself,
      an alias that shares its version counter (no copy, and autograd may still steal it); an
      AccumulateGrad event's gradients, which autograd and the program change in place later
      (the next accumulation, clipping, ``zero_``), are copied when the event is recorded. The
      two kernel sets do the same (``Core::keep_alias`` / ``Core::keep_copy`` in
      ``cxx/core.h``, ``PyCore._keep`` / ``PyCore._keep_copy``);
    * a leaf's ``.grad`` history and edits (``n{id}.gh{h}``, ``n{id}.ge{j}``): copies; its value
      when first met (``n{id}.value``, a copy) and at the end (``n{id}.end``).
    A reference whose version moved before the document was built no longer holds what was
    recorded: it is left out with reason ``changed``, never written wrong.

NOTE [what the budget keeps first]
    Past ``budget_bytes`` the file keeps, in this order and each class in document order: the
    leaves' gradients and values, the path to the first non-finite value (its node's inputs
    and outputs), the other gradients, then forward values. Within the class where the budget
    first runs short, smaller tensors after a left-out one may still fit; no later class gets
    any (a small forward value never displaces a gradient). Everything else is listed in
    ``tensors.left_out`` (the first ``LEFT_OUT_LISTED``, the counts whole) and has no ``key``.
    The path to the first non-finite value is the first function node (creation order) whose
    output is not finite, with the values on its incoming edges, and the first backward event
    with a gradient that is not finite (``tensordoc._first_nonfinite``).

NOTE [held within the budget]
    While recording, what is held is capped by one budget for everything: the core holds
    gradients (``Core::keep_alias`` / ``PyCore._keep``) and the tap forward outputs
    (``cxx/tap.h`` / ``OutputTap``), both charged to the core's ``keep_budget``
    (``budget_bytes``). A gradient that would pass it first lets go of the forward outputs held
    last (a forward value never keeps a gradient out: ``Tap::evict`` / ``OutputTap.evict``);
    past that a tensor is not held and is listed with reason ``budget``. Everything goes in
    the order things happen in the run, so the same snippet and seed leave out the same
    tensors on both kernel sets. The order of NOTE [what the budget keeps first] then chooses
    among what was held: where the gradients of a run alone pass the budget, those met first
    are held, a leaf's included or not (the recorder cannot know a gradient's class when it
    meets it). Held here means counted at ``numel * element_size`` (an alias counts though its
    storage may live on anyway), so peak memory is at most the run's without a tensor file
    plus the budget (what is held), plus the saved tensors no node made, held within a cap of
    their own of the same size (NOTE [saved tensors from no node] in ``capture/saved.py``),
    plus the file itself, made once (NOTE [the file written once] in ``cxx/tensorfile.h``): at
    most three times the budget plus a constant, and in practice near the budget (a file holds
    what was held); ``bench/bench_tensors.py`` measures it. A run without a tensor file holds
    nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import torch

from gradtrace.capture import native

DEFAULT_RECORD_BUDGET = 512 << 20
"""``gradtrace.record(tensor_budget=...)``'s default: a notebook's own machine."""
LEFT_OUT_LISTED = 200

_CODES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
          torch.uint8: "U8", torch.bool: "BOOL", torch.uint16: "U16", torch.uint32: "U32",
          torch.uint64: "U64", torch.float8_e4m3fn: "F8_E4M3", torch.float8_e5m2: "F8_E5M2"}

LEAF, NONFINITE, GRADIENT, FORWARD = 0, 1, 2, 3


@dataclass(slots=True)
class Candidate:
    """One tensor the file may hold."""

    key: str
    tensor: torch.Tensor | None
    nbytes: int
    rank: int
    reason: str | None = None
    """Why it cannot be kept whatever the budget (``dtype``, ``changed``)."""


_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_STRIDED = torch.strided


def storable(t: torch.Tensor) -> str | None:
    """None when safetensors can hold ``t`` exactly, else the reason it is left out."""
    if _wrapped(t):  # a vmap/grad level's, gone now
        return "transform"
    if (t.dtype not in _CODES or t.layout is not _STRIDED or t.is_quantized or t.is_nested or t.is_meta
            or (type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter))):
        return "dtype"
    return None


def candidate(key: str, t: torch.Tensor | None, rank: int, *, reason: str | None = None) -> Candidate:
    if t is None:
        return Candidate(key, None, 0, rank, reason or "dtype")
    why = reason or storable(t)
    if why is None:  # plain strided memory: ``numel * element_size``
        return Candidate(key, t, t.nbytes, rank, None)
    try:
        nbytes = t.numel() * t.element_size() if t.layout == torch.strided and not t.is_nested else 0
    except Exception:  # a subclass without sizes
        nbytes = 0
    return Candidate(key, None if why else t, nbytes, rank, why)


class TensorFile:
    """The kept tensors of one document, in process, and their safetensors bytes."""

    def __init__(self, tensors: Mapping[str, torch.Tensor], info: dict[str, Any], data: bytes) -> None:
        self.tensors = tensors
        self.info = info
        """The document's ``tensors`` field (``schema.document.TensorFile``)."""
        self.data = data

    def __contains__(self, key: str) -> bool:
        return key in self.tensors


def select(cands: list[Candidate], budget: int) -> tuple[list[Candidate], list[Candidate]]:
    """NOTE [what the budget keeps first]: (kept, left out), both in priority order."""
    kept: list[Candidate] = []
    out: list[Candidate] = []
    used = 0
    full: int | None = None  # the class where the budget first ran short: none after it
    for c in sorted(cands, key=lambda c: c.rank):  # stable: document order within a class
        if c.reason is not None:
            out.append(c)
        elif used + c.nbytes > budget or (full is not None and c.rank > full):
            c.reason = "budget"
            out.append(c)
            full = c.rank if full is None else full
        else:
            used += c.nbytes
            kept.append(c)
    return kept, out


def _flat_bytes(t: torch.Tensor) -> torch.Tensor:
    """``t``'s bytes, row-major, as a flat uint8 tensor (a view; one copy when not contiguous)."""
    flat = t.detach().cpu().resolve_neg().contiguous().view(-1)
    if flat.numel() > 1 and flat.stride(0) != 1:  # a one-element tensor expanded (stride 0)
        flat = flat.clone(memory_format=torch.contiguous_format)
    return flat if flat.dtype == torch.uint8 else flat.view(torch.uint8)


def write(kept: list[Candidate], *, in_core: bool | None = None) -> bytes:
    """The safetensors bytes: 8-byte header length, the JSON header (padded with spaces to 8
    bytes, as the reference writer does), then the buffers in ``kept``'s order.

    NOTE [one pass]: with the C++ core the file, its header too, is written straight into its
    final bytes (NOTE [the file written once] in ``cxx/tensorfile.h``; ``write_keyed_file`` in
    ``cxx/stats.h``). Without it the whole file is one
    buffer, sized from the header, and every buffer is written into it by a single
    ``torch.cat(..., out=)`` over flat byte views of the tensors (no per-tensor numpy array or
    Python-level copy): thousands of small gradients cost one kernel call; then it is copied
    once more into ``bytes``. Both give the same bytes (``tests/capture/test_tensor_held.py``
    compares the kernel sets' files). ``safetensors.torch.save`` would build a dict, sort it by dtype and copy each
    tensor through Python; its output is the same format, which ``read`` (``safetensors``
    itself) checks in the tests. ``in_core``: the C++ core's writer (default: where the
    kernels are the core's)."""
    if in_core is None:
        in_core = native.default_native()
    if in_core and native.core is not None:
        # NOTE [the tensor file's side in bulk] in cxx/stats.h: the header written there too
        with torch._C.DisableTorchFunction():
            return bytes(native.core.write_keyed_file([c.key for c in kept], [c.tensor for c in kept],
                                                      [c.nbytes for c in kept]))
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "writer": "gradtrace"}}
    offset = 0
    for c in kept:
        t = c.tensor
        assert t is not None
        header[c.key] = {"dtype": _CODES[t.dtype], "shape": list(t.shape),
                         "data_offsets": [offset, offset + c.nbytes]}
        offset += c.nbytes
    text = orjson.dumps(header)
    text += b" " * (-len(text) % 8)
    start = 8 + len(text)
    buf = bytearray(start + offset)
    buf[:8] = len(text).to_bytes(8, "little")
    buf[8:start] = text
    if offset:
        with torch._C.DisableTorchFunction():
            parts = [_flat_bytes(c.tensor) for c in kept if c.nbytes and c.tensor is not None]
            torch.cat(parts, out=torch.frombuffer(buf, dtype=torch.uint8, offset=start, count=offset))
    return bytes(buf)


def build(cands: list[Candidate], budget: int) -> TensorFile:
    kept, out = select(cands, budget)
    data = write(kept)
    info = {"format": "safetensors", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "count": len(kept), "budget_bytes": budget,
            "left_out": [{"key": c.key, "bytes": c.nbytes, "reason": c.reason} for c in out[:LEFT_OUT_LISTED]],
            "left_out_count": len(out), "left_out_bytes": sum(c.nbytes for c in out)}
    return TensorFile(Held({c.key: c.tensor for c in kept if c.tensor is not None}), info, data)


class Held(Mapping[str, torch.Tensor]):
    """The kept tensors by key, each detached when it is asked for: a file holds thousands,
    and a run's analysis or a person reads a few (detaching all of them up front cost more
    than writing the file)."""

    __slots__ = ("_raw",)

    def __init__(self, raw: dict[str, torch.Tensor]) -> None:
        self._raw = raw

    def __getitem__(self, key: str) -> torch.Tensor:
        t = self._raw[key]
        with torch._C.DisableTorchFunction():
            return t.detach()

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def read(data: bytes) -> dict[str, Any]:
    """Every tensor of a tensor file's bytes, as numpy arrays (``safetensors.numpy``)."""
    from safetensors.numpy import load

    return dict(load(data))


def tensors_in(data: bytes) -> Iterator[str]:
    """The keys of a tensor file, in file order."""
    n = int.from_bytes(data[:8], "little")
    header = orjson.loads(data[8:8 + n])
    yield from (k for k in header if k != "__metadata__")
