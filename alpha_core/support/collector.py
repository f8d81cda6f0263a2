"""The cyclic garbage collector, paused while a pure phase builds a large heap.

A cold analysis makes millions of small, long-lived objects (trees, checks, programs) and no
garbage cycles worth collecting while it runs. With the collector on, its generational
collections walked every object made so far, again and again: 40% of a cold check of 4,000
systems. The phases that build such heaps (`Workspace.analyze`, the placed tree of
`ParsedFile.module`) run with it paused; it runs again afterwards, so nothing cyclic is kept
longer than the phase.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused(freeze: bool = False) -> Iterator[None]:
    """The collector off for the phase, on again after it. With `freeze`, every object alive at
    the end goes to the permanent generation first (`gc.freeze`), so that later collections
    never walk the phase's heap again: right for a process that analyses once and exits (after
    a pause alone, the next collections of each generation walked the whole new heap, 3 times,
    while `alpha check` printed its results), wrong for one that runs on, where cyclic garbage
    alive at a freeze would never be collected. An analysis itself holds no cycles."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
        if freeze:
            gc.freeze()
    finally:
        gc.enable()
