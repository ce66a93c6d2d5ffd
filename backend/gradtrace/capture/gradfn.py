"""A tensor's ``grad_fn`` read as a look that never breaks the program (NOTE [a view's
grad_fn read after an in-place change])."""

from __future__ import annotations

import torch
from torch.autograd.graph import Node


def grad_fn_or_none(t: torch.Tensor) -> Node | None:
    """``t.grad_fn``, or None where reading it raises.

    NOTE [a view's grad_fn read after an in-place change]
        Reading ``grad_fn`` is no pure look for a view: when the view or its base changed in
        place since the view's node was made, autograd remakes the node on the spot, and for
        a view made under ``no_grad`` (or in inference mode, or one of several outputs) it
        raises instead ("A view was created in no_grad mode and its base ... has been modified
        inplace"). ``nn.Embedding(padding_idx=0)`` does just that in its constructor
        (``self.weight[padding_idx].fill_(0)`` under ``no_grad``): the snippet never reads the
        view's ``grad_fn``, so the recorder must not make its read raise into the snippet
        (tests/capture/test_faithful.py, ``views_changed_under_no_grad``)."""
    try:
        return t.grad_fn
    except RuntimeError:
        return None
