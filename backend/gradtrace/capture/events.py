"""What the recorder keeps per backward pass and per node execution, and its stop signal."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import orjson


class ModulePath(str):
    """A module's path as the module tracker notes it (``rec.module_stack``, ``rec.module_log``),
    carrying the module calls on the stack at that point (``Node.module_stack``): ``stack_json``
    as their canonical JSON for the C++ core's writer, ``stack`` as the document's objects, read
    from it when first asked (only the Python recorder and a diagnosis ask: a module call that
    built the list each time paid for objects nothing read, NOTE [module hooks per call] in
    modules.py)."""

    stack_json: str

    @cached_property
    def stack(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = orjson.loads(self.stack_json)
        return found


class LimitReached(BaseException):
    """Raised inside the snippet when a node or event cap is hit; ends the run as graph_limit."""


class RecordingStopped(Exception):
    """A cap was hit where the program must go on as without gradtrace: anywhere in an
    in-process ``gradtrace.record()`` block, and in a hook on another thread than the block's (a
    backward run by a ``threading.Thread``). Recording stops, and whatever part of the recorder
    was running returns quietly (NOTE [limits] and NOTE [other threads] in recorder.py)."""


@dataclass
class PassInfo:
    doc: dict[str, Any]
