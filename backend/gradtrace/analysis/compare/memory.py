"""Saved-tensor memory over a run's timeline, and what checkpointing recomputes.

What the document records (``schema/document.py``): each function node's saved tensors
(``saved``: name, bytes, whether it is a parameter, ``freed_after_pass``) and, for nodes whose
saved tensors were not read because reading them recomputes them (checkpointed nodes),
``saved_unread``. From that:

* a node's saved tensors come alive at its forward event: the bytes of every saved tensor
  that is not a parameter (a parameter is alive anyway; saving it costs nothing);
* they die at the node's backward call in the pass autograd freed them after
  (``freed_after_pass``), which is when autograd releases a node's saved variables; tensors
  never freed (``retain_graph=True``, no backward) stay alive to the end;
* a checkpointed node saved nothing the forward keeps (its bytes are 0) and is recomputed in
  the backward: ``recomputed`` counts those nodes (``AccumulateGrad`` excepted: it is not an op).

``live[k]`` is the bytes alive at step k (after the first k events), as the page's transport
counts steps.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from gradtrace.schema.compare import MemoryTimeline


def memory_timeline(doc: dict[str, Any]) -> MemoryTimeline:
    """The saved-tensor memory of ``doc`` step by step (see the module docstring)."""
    events = doc.get("events") or []
    saved: dict[str, int] = {}
    freed: dict[tuple[str, int], int] = defaultdict(int)
    recomputed = 0
    for node in doc["graph"]["nodes"]:
        if node.get("kind") != "function":
            continue
        if node.get("saved_unread") and not node.get("saved_once") and node.get("name") != "AccumulateGrad":
            recomputed += 1
        total = 0
        for tensor in node.get("saved") or ():
            if tensor.get("is_parameter"):
                continue
            size = int(tensor.get("bytes") or 0)
            total += size
            after = tensor.get("freed_after_pass")
            if isinstance(after, int):
                freed[(node["id"], after)] += size
        saved[node["id"]] = total
    last_call: dict[tuple[str, int], int] = {}
    for k, event in enumerate(events):
        if event.get("phase") == "backward":
            last_call[(event["node"], event.get("pass") or 0)] = k
    frees_at = {k: freed.get(key, 0) for key, k in last_call.items()}
    live = [0]
    seen: set[str] = set()
    now = 0
    for k, event in enumerate(events):
        node_id = event["node"]
        if event.get("phase") == "forward" and node_id not in seen:
            seen.add(node_id)
            now += saved.get(node_id, 0)
        elif event.get("phase") == "backward":
            now -= frees_at.get(k, 0)
        live.append(now)
    peak = max(live)
    return MemoryTimeline(live=live, peak=peak, peak_step=live.index(peak), recomputed=recomputed, end=live[-1])
