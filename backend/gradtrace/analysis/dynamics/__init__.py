"""Training dynamics: series by iteration of a run with repeated backward passes (each
parameter's gradient norm, mean and max |grad|, update:data ratio; each activation layer's
saturated or dead share; the loss) and by call of a module one pass walks many times (‖grad‖
at each call's outputs), computed once per run from the document and its tensor file
(``series.py``, ``layers.py``, ``calls.py``). Callers import from here (``tests/test_layering.py``)."""

from gradtrace.analysis.dynamics.layers import SATURATION
from gradtrace.analysis.dynamics.read import file_reader
from gradtrace.analysis.dynamics.series import Tensors, dynamics

__all__ = ["SATURATION", "Tensors", "dynamics", "file_reader"]
