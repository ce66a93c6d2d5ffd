"""The first non-finite value of a run, forward and backward: the op that produced it, the
arithmetic that did and the pattern behind it (NOTE [producer, not carrier] in ``first.py``).

- ``first.py``: the first NaN (or infinity) of the backward pass, in the engine's order, and
  the badge of the final gradients;
- ``forward.py``: the first of the forward pass, from the kept outputs;
- ``traps.py``: the patterns behind a NaN made in backward (shared with the gradient check);
- ``forward_traps.py``: the arithmetic behind one made in forward;
- ``scaler.py``: a GradScaler that already skipped the step it would have spoiled.
"""

from gradtrace.analysis.nonfinite.first import badge, first_nonfinite
from gradtrace.analysis.nonfinite.traps import MASKING, Trap, trap_for

__all__ = ["MASKING", "Trap", "badge", "first_nonfinite", "trap_for"]
