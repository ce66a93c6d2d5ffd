"""The cyclic garbage collector around a recorded block (NOTE [gc] in :mod:`.session`)."""

from __future__ import annotations

import gc


def settle_young_objects() -> None:
    """Move every object the collector tracks to the oldest generation without walking them.

    ``freeze`` moves them all to the permanent generation and resets the young count;
    ``unfreeze`` puts them back, into the oldest. Why: a recorded GRU-200 leaves ~150,000 young
    objects (recorder entries, document dicts) that live until the run ends; with the count
    past the threshold, the next allocation would walk them all (15 ms at the block's exit).
    Cyclic garbage among them is still found by the next full collection.
    """
    gc.freeze()
    gc.unfreeze()
