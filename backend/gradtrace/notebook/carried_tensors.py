"""The tensors a saved HTML file carries: a safetensors file of its own, within a byte budget.

NOTE [tensors carried offline]
    ``doc.save_html()`` embeds the run's tensor file so that the saved page's inspector shows
    heatmaps and exact numbers with no service (``frontend/src/tensors/source.js``
    ``bytesSource``). A file larger than the budget is cut down by slicing its bytes (no torch,
    no numpy: every dtype kept exactly, bfloat16 included): the leaves' values and gradients
    first (``n…`` keys other than forward outputs), then the backward gradients (``e…``), then
    the forward outputs (``n….out…``), each group in the file's order, skipping a tensor that
    does not fit. The element says the budget and what was left out, and the page says it too.
"""

from __future__ import annotations

import base64
import html
import json
import re
import struct
from typing import Any

TENSOR_BUDGET = 8 << 20
"""Bytes of tensor data a saved HTML file carries at most by default (base64 makes the page
about 4/3 of that)."""

ELEMENT_ID = "gt-tensors"


def _rank(key: str) -> int:
    if key.startswith("e"):
        return 1
    return 2 if re.search(r"\.out\d+$", key) else 0


def within_budget(data: bytes, budget: int) -> tuple[bytes, dict[str, Any]]:
    """The safetensors file ``data`` cut to at most ``budget`` bytes of tensor data (see NOTE
    [tensors carried offline]), and what the saved page says about it."""
    base, header = read_header(data)
    entries = [(k, v) for k, v in header.items() if k != "__metadata__"]
    total = sum(v["data_offsets"][1] - v["data_offsets"][0] for _, v in entries)
    if total <= budget:
        kept_entries = entries
    else:
        kept_entries, room = [], budget
        for k, v in sorted(entries, key=lambda kv: (_rank(kv[0]), kv[1]["data_offsets"][0])):
            size = v["data_offsets"][1] - v["data_offsets"][0]
            if size <= room:
                kept_entries.append((k, v))
                room -= size
    kept_keys = {k for k, _ in kept_entries}
    info = {"budget_bytes": budget, "count": len(kept_entries), "bytes": sum(
        v["data_offsets"][1] - v["data_offsets"][0] for _, v in kept_entries),
        "left_out_count": len(entries) - len(kept_entries), "left_out_bytes": 0}
    info["left_out_bytes"] = total - info["bytes"]
    if len(kept_entries) == len(entries):
        return data, info
    out_header: dict[str, Any] = {}
    chunks, at = [], 0
    for k, v in sorted(((k, v) for k, v in entries if k in kept_keys), key=lambda kv: kv[1]["data_offsets"][0]):
        b, e = v["data_offsets"]
        chunks.append(data[base + b:base + e])
        out_header[k] = {"dtype": v["dtype"], "shape": v["shape"], "data_offsets": [at, at + e - b]}
        at += e - b
    text = json.dumps(out_header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the buffers start 8-aligned, as safetensors writes them
    return struct.pack("<Q", len(text)) + text + b"".join(chunks), info


def tensors_element(data: bytes | None, budget: int = TENSOR_BUDGET) -> str:
    """The saved page's data element with the tensor file (base64, never run), or "" for a run
    without one."""
    if not data:
        return ""
    carried, info = within_budget(data, budget)
    payload = base64.b64encode(carried).decode("ascii")
    attrs = html.escape(json.dumps(info, separators=(",", ":")), quote=True)
    return f'<script type="application/octet-stream+base64" id="{ELEMENT_ID}" data-info="{attrs}">{payload}</script>\n'


def read_header(data: bytes) -> tuple[int, dict[str, Any]]:
    """``(8 + N, header)`` of the safetensors file ``data``; ValueError when it is not one."""
    if len(data) < 8:
        raise ValueError("not a safetensors file: shorter than its header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise ValueError("not a safetensors file: its header runs past the end")
    header = json.loads(data[8:8 + n])
    if not isinstance(header, dict):
        raise ValueError("not a safetensors file: its header is not an object")
    return 8 + n, header


def tensor_slice(data: bytes, key: str) -> tuple[str, list[int], bytes]:
    """One tensor of the safetensors file ``data``: its dtype, shape and raw little-endian
    bytes (the widget sends them to the page as they are). KeyError when the file lacks it."""
    base, header = read_header(data)
    if key == "__metadata__" or key not in header:
        raise KeyError(f"{key}: no such tensor in this run's tensor file")
    v = header[key]
    b, e = v["data_offsets"]
    return str(v["dtype"]), list(v["shape"]), data[base + b:base + e]
