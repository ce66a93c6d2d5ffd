"""The run's tensor file: every number kept, exactly, in a safetensors file beside the document
(docs/CONTRACT.md, "The tensor file").

NOTE [kept tensors]
    What the file holds, and how capture holds it until the document is built:
    * a function node's forward outputs (``n{id}.out{k}``): the tap (``cxx/tap.h``, its twin
      :mod:`gradtrace.capture.outputs`), by reference, copied only before a write;
    * a backward event's gradients (``e{i}.go{k}``, ``e{i}.gi{k}``, ``e{i}.grad``,
      ``e{i}.hb{k}``/``e{i}.ha{k}``): each captured value of the core keeps the tensor itself,
      an alias that shares its version counter (no copy, and autograd may still steal it),
      copied before a write the tap sees, as a forward output is (the memory of a ``.grad``
      that clipping or the next accumulation changes: NOTE [held gradients copied before a
      write] in ``cxx/tap.h``); an AccumulateGrad event's gradients are copied when the event
      is recorded. The two kernel sets do the same (``Core::keep_alias`` / ``Core::keep_copy``
      in ``cxx/core.h``, ``PyCore._keep`` / ``PyCore._keep_copy``);
    * a leaf's ``.grad`` history and edits (``n{id}.gh{h}``, ``n{id}.ge{j}``): copies; its value
      when first met (``n{id}.value``, a copy) and at the end (``n{id}.end``).
    A reference whose version moved before the document was built (a write the tap did not
    see: another thread, numpy) no longer holds what was recorded: it is left out with reason
    ``changed``, never written wrong.

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
    (``cxx/tap.h`` / ``OutputTap``) and the saved tensors no node made (``Tap::hold_saved`` /
    ``OutputTap.hold_saved``: NOTE [saved tensors from no node] in ``capture/saved.py``), all
    charged to the core's ``keep_budget`` (``budget_bytes``). A gradient that would pass it
    first lets go of the forward values held last, saved tensors among them (a forward value
    never keeps a gradient out: ``Tap::evict`` / ``OutputTap.evict``); past that a tensor is
    not held and is listed with reason ``budget``. Everything goes in the order things happen
    in the run, so the same snippet and seed leave out the same tensors on both kernel sets.
    The order of NOTE [what the budget keeps first] then chooses among what was held: where
    the gradients of a run alone pass the budget, those met first are held, a leaf's included
    or not (the recorder cannot know a gradient's class when it meets it). Held here means
    counted at ``numel * element_size`` (an alias counts though its storage may live on
    anyway); ``held_peak()`` is the most ever held (never above the budget). The file is then
    written as what is held is let go (NOTE [each tensor let go once written]), so peak memory
    is at most the run's without a tensor file plus the budget plus ``PEAK_CONSTANT`` (64 MiB):
    the memory let go but not yet given back between two trims (``4 * WRITE_BATCH``, and a
    tensor the allocator keeps for itself), the file's header and the document's own entries
    for the tensors (keys, outputs' stats, the tap's and the file's bookkeeping: these grow with
    the number of tensors, not their size; about 45 MiB on GRU-200's 11,000 ops, so a run of
    many more small ops may pass the constant by them). Nothing is copied on the way: a tensor that is not row-major is
    written element by element into its place, and the leaves' values at the end are aliases
    (the run is over). So the peak comes while recording (what is held, beside the run's own);
    writing the file lowers resident memory, as what it holds is let go and given back. A run
    without a tensor file holds nothing. ``tests/capture/test_peak_memory.py`` checks it on
    both kernel sets (the high-water mark, and a fresh process's peak resident memory against
    the same run without tensors); ``bench/bench_peak_memory.py`` measures it.

NOTE [each tensor let go once written]
    Once ``select`` has chosen, every other holder of a kept tensor lets go (the core's values
    and saved entries, the tap's outputs: ``Recorder::release_kept`` / ``PyCore.release_kept``,
    ``OutputTap.release`` / ``NativeTap.release``), and the writer lets go of each tensor as
    soon as its bytes are in the file (``write_tensor_file`` in ``cxx/tensorfile.h``, ``write``
    here, a batch at a time): the file grows as the held set shrinks. The file's ``bytes`` is
    allocated at once, but its pages become memory only as they are written; the memory let go
    goes back to the system (glibc's ``malloc_trim`` every ``4 * WRITE_BATCH`` bytes written:
    small tensors' memory would otherwise stay with the allocator, beside the file). In
    process the kept tensors are then read from the file's bytes (``FileTensors``: each a copy
    of its own bytes; the analysis reads them in place with numpy). A second document of the
    same run reuses what the first made of it (``TensorFile.made``: the tensors are gone).

NOTE [the index the writer knows]
    The writer knows each kept tensor's key, dtype, shape and place in the file as it writes the
    header, so it hands them back beside the bytes (``write(index=...)``; in C++ in
    ``write_keyed_file``, ``cxx/stats.h``) as key -> (safetensors code, shape, begin, end)
    with the offsets into the file's bytes. On the core's kernels the index stays in C++: the
    core's ``KeptFile`` is a mapping whose entry tuple is made only when a key is read
    (NOTE [the kept file in one place] in ``cxx/keptfile.h``). In the process that wrote it,
    nothing parses the header again: ``FileTensors`` reads tensors by it, and the analysis reads the file in place
    through it (``file_reader(data, index)`` in ``analysis/dynamics/read.py``, torch-free: the
    codes are strings). A process that has only the bytes parses the header once
    (``file_tensors``, ``file_reader(data)``).
"""

from __future__ import annotations

import ctypes
import hashlib
import operator
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import orjson
import torch

from gradtrace.capture import native
from gradtrace.capture.candidates import SAFETENSORS_CODES, Candidate

DEFAULT_RECORD_BUDGET = 512 << 20
"""``gradtrace.record(tensor_budget=...)``'s default: a notebook's own machine."""
LEFT_OUT_LISTED = 200
PEAK_CONSTANT = 64 << 20
"""NOTE [held within the budget]: what peak memory may pass the run's own plus the budget by."""

class TensorFile:
    """The kept tensors of one document, in process, and their safetensors bytes."""

    def __init__(self, tensors: Mapping[str, torch.Tensor], info: dict[str, Any], data: bytes) -> None:
        self.tensors = tensors
        self.info = info
        """The document's ``tensors`` field (``schema.document.TensorFile``)."""
        self.data = data
        self.made: tuple[Any, ...] | None = None
        """What ``tensordoc.attach`` made of the document with it (a second document of the
        same run reuses it: NOTE [each tensor let go once written])."""

    def __contains__(self, key: str) -> bool:
        return key in self.tensors

    def __copy__(self) -> TensorFile:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorFile:
        """Itself: a file is never changed once written (its bytes, its index, what its
        document made of it), and the core's index (``KeptFile``, cxx/keptfile.h) is no Python
        object that copies."""
        return self

    def __getstate__(self) -> dict[str, Any]:
        """For pickle: the core's index as the plain mapping it reads as (key -> its entry)."""
        state = dict(self.__dict__)
        tensors = state["tensors"]
        if not isinstance(tensors, dict):
            state["tensors"] = {key: tensors[key] for key in tensors}
        return state


_rank = operator.attrgetter("rank")


def select(cands: list[Candidate], budget: int) -> tuple[list[Candidate], list[Candidate]]:
    """NOTE [what the budget keeps first]: (kept, left out), both in priority order."""
    order = sorted(cands, key=_rank)  # stable: document order within a class
    if sum([c.nbytes for c in order if c.reason is None]) <= budget:  # as a rule: all of them fit
        return [c for c in order if c.reason is None], [c for c in order if c.reason is not None]
    kept: list[Candidate] = []
    out: list[Candidate] = []
    used = 0
    full: int | None = None  # the class where the budget first ran short: none after it
    for c in order:
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
    if flat.numel() > 0 and flat.stride(0) != 1:  # expanded (stride 0): even one element views as bytes only at 1
        flat = flat.clone(memory_format=torch.contiguous_format)
    return flat if flat.dtype == torch.uint8 else flat.view(torch.uint8)


def _in_place(t: torch.Tensor, at: int) -> bool:
    """Whether ``t`` is copied element by element into its place in the file (``at``): one that
    is not plain row-major memory and whose dtype can be read there, as ``cxx/tensorfile.h``
    does (no contiguous copy of it first)."""
    return (not t.is_contiguous() and not t._is_zerotensor() and t.numel() > 0
            and at % t.element_size() == 0)


WRITE_BATCH = 4 << 20
"""The Python writer's batch: tensors are copied into the file by one ``torch.cat`` per this
many bytes, then let go (NOTE [each tensor let go once written])."""


def _trim() -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``: freed memory back to the system (``cxx/tensorfile.h`` does the
    same every ``WRITE_BATCH * 4`` bytes written), or nothing where there is no glibc."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


_malloc_trim = _trim()


_BYTES_DATA = sys.getsizeof(b"") - 1
"""Where a ``bytes`` object's contents start, from its address (CPython's ``ob_sval``)."""


def _filled(size: int) -> tuple[bytes, torch.Tensor]:
    """A new ``bytes`` of ``size`` and a uint8 tensor over its memory, to fill it before anyone
    else sees it (NOTE [each tensor let go once written]: the C++ writer's
    ``PyBytes_FromStringAndSize(nullptr, n)``; ``bytes(n)`` is ``calloc``'d, so its pages are
    touched only as they are written). The tensor is made over a writable ctypes view of
    the new object's contents: ``torch.frombuffer`` of the read-only ``bytes`` itself warns,
    and silencing that with ``warnings.catch_warnings`` would reset every "shown once" of the
    program's warnings (recording must not make a program print a warning twice). ``size``
    is at least 2: CPython shares the empty and one-byte objects."""
    if size < 2:
        raise ValueError("tensor file: a file is at least its 8-byte header length")
    data = bytes(size)
    view = (ctypes.c_char * size).from_address(id(data) + _BYTES_DATA)
    return data, torch.frombuffer(view, dtype=torch.uint8)


Index = dict[str, tuple[str, tuple[int, ...], int, int]]
"""NOTE [the index the writer knows]: key -> (safetensors code, shape, begin, end), the offsets
into the file's bytes."""


def write(kept: list[Candidate], *, in_core: bool | None = None, index: Index | None = None) -> bytes:
    """The safetensors bytes: 8-byte header length, the JSON header (padded with spaces to 8
    bytes, as the reference writer does), then the buffers in ``kept``'s order. Each
    candidate's tensor is let go (``tensor`` set to None) once its bytes are in the file.

    NOTE [one pass]: with the C++ core the file, its header too, is written straight into its
    final bytes (NOTE [the file written once] in ``cxx/tensorfile.h``; ``write_keyed_file`` in
    ``cxx/stats.h``). Without it the file is one ``bytes`` sized from the header, filled
    through a tensor over its memory by one ``torch.cat(..., out=)`` per ``WRITE_BATCH`` bytes
    of flat byte views of the tensors (no per-tensor numpy array or Python-level copy:
    thousands of small gradients cost a few kernel calls). Both give the same bytes
    (``tests/capture/test_tensor_held.py`` compares the kernel sets' files).
    ``safetensors.torch.save`` would build a dict, sort it by dtype and copy each tensor
    through Python; its output is the same format, which ``read`` (``safetensors`` itself)
    checks in the tests. ``in_core``: the C++ core's writer (default: where the kernels are
    the core's). ``index``: filled with each key's place in the file (NOTE [the index the
    writer knows])."""
    if in_core is None:
        in_core = native.default_native()
    if in_core and native.core is not None:
        # NOTE [the tensor file's side in bulk] in cxx/stats.h: the header written there too
        keys, sizes, tensors = [c.key for c in kept], [c.nbytes for c in kept], [c.tensor for c in kept]
        for c in kept:  # ``tensors`` is their one holder now: each is let go once written
            c.tensor = None
        with torch._C.DisableTorchFunction():
            return bytes(native.core.write_keyed_file(keys, tensors, sizes, index))
    header: dict[str, Any] = {"__metadata__": {"format": "pt", "writer": "gradtrace"}}
    offset = 0
    for c in kept:
        t = c.tensor
        assert t is not None
        header[c.key] = {"dtype": SAFETENSORS_CODES[t.dtype], "shape": list(t.shape),
                         "data_offsets": [offset, offset + c.nbytes]}
        offset += c.nbytes
    text = orjson.dumps(header)
    text += b" " * (-len(text) % 8)
    head = len(text).to_bytes(8, "little") + text
    if index is not None:
        start = len(head)
        for c in kept:
            v = header[c.key]
            a, b = v["data_offsets"]
            index[c.key] = (v["dtype"], tuple(v["shape"]), start + a, start + b)
    parts: list[Any] = [c.tensor for c in kept if c.nbytes and c.tensor is not None]
    for c in kept:  # ``parts`` is their one holder now: each is let go once written
        c.tensor = None
    data, dst = _filled(len(head) + offset)
    dst[:len(head)].copy_(torch.frombuffer(bytearray(head), dtype=torch.uint8))
    at = trimmed = len(head)
    with torch._C.DisableTorchFunction():
        i = 0
        while i < len(parts):
            batch: list[torch.Tensor] = []
            size = 0
            while i < len(parts) and (not batch or size < WRITE_BATCH) and not _in_place(parts[i], at + size):
                batch.append(_flat_bytes(parts[i]))
                parts[i] = None
                size += batch[-1].numel()
                i += 1
            if batch:
                torch.cat(batch, out=dst[at:at + size])
                at += size
                del batch
            else:  # its elements straight into the file
                one: torch.Tensor = parts[i]
                n = one.numel() * one.element_size()
                dst[at:at + n].view(one.dtype).view(one.shape).copy_(one)
                parts[i] = None
                del one
                at += n
                i += 1
            if at - trimmed >= 4 * WRITE_BATCH:  # what was let go goes back to the system
                _malloc_trim()
                trimmed = at
    if at != len(data):
        raise RuntimeError("tensor file: the tensors fall short of the header's sizes")
    return data


class FileTensors(Mapping[str, torch.Tensor]):
    """The kept tensors by key, read from the file's bytes when asked (each a tensor of its
    own: a copy of its bytes), so that nothing but the file is held once it is written."""

    def __init__(self, data: bytes, index: Index) -> None:
        self._data = data
        self.index = index
        """NOTE [the index the writer knows]."""

    def __getitem__(self, key: str) -> torch.Tensor:
        code, shape, begin, end = self.index[key]
        dtype = _DTYPES[code]
        if begin == end:
            return torch.empty(shape, dtype=dtype)
        raw = bytearray(memoryview(self._data)[begin:end])
        return torch.frombuffer(raw, dtype=dtype).view(shape)

    def __iter__(self) -> Iterator[str]:
        return iter(self.index)

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, key: object) -> bool:
        return key in self.index


_DTYPES = {code: dtype for dtype, code in SAFETENSORS_CODES.items()}


def file_tensors(data: bytes) -> FileTensors:
    """The tensors of a file this module wrote (its header read once)."""
    n = int.from_bytes(data[:8], "little")
    header = orjson.loads(data[8:8 + n])
    start = 8 + n
    return FileTensors(data, {k: (v["dtype"], tuple(v["shape"]), start + v["data_offsets"][0],
                                  start + v["data_offsets"][1])
                              for k, v in header.items() if k != "__metadata__"})


def build(cands: list[Candidate], budget: int, release: Callable[[], None] | None = None) -> TensorFile:
    """The file of what ``select`` keeps. ``release``: lets go of every other holder of the
    kept tensors (the core's, the tap's), so that each is let go once written (NOTE [each
    tensor let go once written])."""
    kept, out = select(cands, budget)
    for c in out:
        c.tensor = None
    if release is not None:
        release()
    listed = [(c.key, c.nbytes, c.reason or "") for c in out[:LEFT_OUT_LISTED]]
    n_out, out_bytes = len(out), sum(c.nbytes for c in out)
    count = len(kept)
    index: Index = {}
    data = write(kept, index=index)
    return TensorFile(FileTensors(data, index), file_info(data, budget, count, listed, n_out, out_bytes), data)


def file_info(data: bytes, budget: int, count: int, listed: list[tuple[str, int, str]], n_out: int,
              out_bytes: int) -> dict[str, Any]:
    """The document's ``tensors`` field for ``data``: ``count`` kept, ``n_out`` left out
    (``out_bytes`` in all), the first of them ``listed`` (key, bytes, reason)."""
    return {"format": "safetensors", "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "count": count, "budget_bytes": budget,
            "left_out": [{"key": key, "bytes": n, "reason": why} for key, n, why in listed],
            "left_out_count": n_out, "left_out_bytes": out_bytes}


def read(data: bytes) -> dict[str, Any]:
    """Every tensor of a tensor file's bytes, as numpy arrays (``safetensors.numpy``)."""
    from safetensors.numpy import load

    return dict(load(data))


def tensors_in(data: bytes) -> Iterator[str]:
    """The keys of a tensor file, in file order."""
    n = int.from_bytes(data[:8], "little")
    header = orjson.loads(data[8:8 + n])
    yield from (k for k in header if k != "__metadata__")
