"""The caller's random state, kept across a check.

A check re-seeds before every execution (that is how a re-run makes the same tensors), which
would leave the caller's generators re-seeded: a side effect on the user's program, most of
all for ``gradtrace.gradcheck`` called in a notebook or a test. :func:`kept` saves Python's
``random``, NumPy's global generator (when NumPy is loaded), torch's CPU generator and the
generator of every initialised device, and puts them back afterwards.
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from typing import Any

import torch

_DEVICES = ("cuda", "xpu", "mps", "mtia")


def _device_states() -> list[tuple[Any, Any]]:
    saved = []
    for name in _DEVICES:
        module = getattr(torch, name, None)
        is_init = getattr(module, "is_initialized", None)
        if module is None or is_init is None or not is_init():
            continue  # an uninitialised device's generator cannot have been used
        if hasattr(module, "get_rng_state_all"):
            saved.append((module.set_rng_state_all, module.get_rng_state_all()))
        elif hasattr(module, "get_rng_state"):
            saved.append((module.set_rng_state, module.get_rng_state()))
    return saved


@contextlib.contextmanager
def kept() -> Iterator[None]:
    py = random.getstate()
    cpu = torch.get_rng_state()
    numpy = sys.modules.get("numpy")
    np_state = numpy.random.get_state() if numpy is not None else None
    devices = _device_states()
    try:
        yield
    finally:
        random.setstate(py)
        torch.set_rng_state(cpu)
        if numpy is not None and np_state is not None:
            numpy.random.set_state(np_state)
        for setter, state in devices:
            setter(state)
