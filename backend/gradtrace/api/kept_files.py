"""A stored tensor file as the judges read it (explain, compare): by range, its header parsed
once per file (NOTE [judges read the tensor file by range] in ``analysis/kept.py``).

A run of a GRU unrolled 200 steps keeps ~16,000 tensors: its header alone is 1 MB of JSON,
read and parsed in tens of milliseconds, while one explanation reads a few kilobytes of
buffers. Headers are therefore kept by the file's SHA-256 (a file never changes under its
hash), for the last ``HEADERS`` files.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from gradtrace.analysis.kept import KeptTensors
from gradtrace.storage.tensor_rows import TensorSource

HEADERS = 16
_HEADERS: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
_LOCK = threading.Lock()


def kept_tensors(source: TensorSource | None) -> KeptTensors | None:
    """A reader of ``source`` (None for none), sharing its parsed header with earlier ones."""
    if source is None:
        return None
    with _LOCK:
        hit = _HEADERS.get(source.sha256)
        if hit is not None:
            _HEADERS.move_to_end(source.sha256)
    kept = KeptTensors(source.read, source.size, hit)
    if hit is None:
        parsed = kept.parsed()
        if parsed[0]:
            with _LOCK:
                _HEADERS[source.sha256] = parsed
                while len(_HEADERS) > HEADERS:
                    _HEADERS.popitem(last=False)
    return kept
