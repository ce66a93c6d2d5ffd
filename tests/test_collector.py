"""gradtrace/collector.py: the one home of the package's garbage-collector control."""

from __future__ import annotations

import gc

from gradtrace.collector import BlockCollector, gc_paused


def test_a_settled_pause_leaves_what_it_made_unwalked_in_the_oldest_generation() -> None:
    """NOTE [gc while building documents]: after the pause, no young collection is pending over
    the objects it made (they would be walked by the very next allocation)."""
    assert gc.isenabled()
    with gc_paused(settle=True):
        made = [[i] for i in range(50_000)]  # lists: always tracked
        assert not gc.isenabled() and gc.get_count()[0] >= 50_000
    assert gc.isenabled() and gc.get_count()[0] < 100
    assert gc.get_freeze_count() == 0 and gc.is_tracked(made[-1])


def test_the_block_collector_raises_the_threshold_for_the_block_and_restores_everything() -> None:
    """NOTE [gc around a recorded block]; ``test_record.py`` checks the same through ``record``."""
    before = (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count())
    block = BlockCollector()
    block.enter()
    assert gc.get_threshold()[0] == max(before[0][0], BlockCollector.YOUNG_THRESHOLD)
    assert gc.get_freeze_count() > 0  # what existed before the block is out of sight
    block.exit()
    block.exit()  # idempotent
    assert (gc.get_threshold(), gc.isenabled(), gc.get_freeze_count()) == before
    gc.disable()
    try:
        quiet = BlockCollector()
        quiet.enter()  # collection is off: nothing to tune, nothing to restore
        assert gc.get_threshold() == before[0] and gc.get_freeze_count() == 0
        quiet.exit()
    finally:
        gc.enable()
