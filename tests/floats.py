"""Floats that exercise every number format JSON writers switch between (shared by the tests of
the canonical writers: capture's, and the schema's fast path)."""

from __future__ import annotations

import math
import random


def awkward_floats(n: int, seed: int = 7) -> list[float]:
    """Floats of every magnitude, the boundaries where number formats switch, and -0.0."""
    rng = random.Random(seed)
    xs = [rng.uniform(1, 10) * 10.0 ** rng.randint(-320, 307) * rng.choice((1, -1)) for _ in range(n)]
    for edge in (1e-4, 1e-5, 1e-6, 1e-10, 1e16):
        x = y = edge
        for _ in range(5):
            x, y = math.nextafter(x, 0), math.nextafter(y, math.inf)
            xs += [x, y, -x, -y]
    return [*xs, 0.0, -0.0, 5e-324, 1.7976931348623157e308, 1.0, 0.1, 0.00001, 0.000015, 10.00001]


def stdlib_canonical(obj: object) -> bytes:
    """The reference for :func:`gradtrace.schema.canonical_json`: ``json.dumps`` with sorted
    keys, compact separators and ``repr`` floats, which the fast writer must equal byte for byte."""
    import json

    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")
