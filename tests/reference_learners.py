"""The learner's round in the NumPy reference: the round's values, clipping by global norm and
the elementwise update, evaluated over whole arrays with the recipes of
alpha_core.semantics.learners (the ones the kernels run per element). The canonical tree over
the gradient's elements and the schedule's integer part are written here again."""

from __future__ import annotations

from typing import Any

import numpy as np

from alpha_core.check.program import Program
from alpha_core.semantics import learners, schedules
from alpha_core.semantics.numpy_arith import NumpyArith

Array = Any
# the global norm of every round apply_round clipped, in order (tests read and clear it)
NORMS: list[float] = []


def element_tree_sum(v: Array) -> np.float32:
    """The canonical tree over v's elements: [lo, hi) splits at lo + the largest power of two
    strictly below hi - lo, left + right. A block of 2**k elements is a perfect tree, added
    level by level (pairs, left first); anything else is a perfect block and the rest."""
    n = v.size
    if n == 1:
        return np.float32(v[0])
    p = 1
    while p * 2 < n:
        p *= 2
    if p * 2 == n:  # a perfect tree
        level = v.astype(np.float32)
        while level.size > 1:
            level = (level[0::2] + level[1::2]).astype(np.float32)
        return np.float32(level[0])
    return np.float32(element_tree_sum(v[:p]) + element_tree_sum(v[p:]))


def apply_round(program: Program, flat: Array, state: Array, gsum: Array, t: int) -> Array:
    """One round's update of every element; `state` (n_state floats) is updated in place.
    Returns the new parameters."""
    A = NumpyArith()
    spec = program.learner
    n = flat.size
    slots = program.state_slots
    when = None
    if spec.schedule is not None:
        ph = schedules.phase(spec.schedule, t)
        when = (np.float32(ph.t), np.float32(ph.after), np.int32(ph.k))
    sqsum = None
    if spec.clip is not None:
        squares = learners.clip_square(A, gsum.astype(np.float32), program.batch)
        sqsum = element_tree_sum(np.asarray(squares))
        NORMS.append(float(np.sqrt(sqsum)))
    b1t = state[slots * n] if program.state_scalars else np.float32(0)
    b2t = state[slots * n + 1] if program.state_scalars else np.float32(0)
    r = learners.round_values(A, spec, when, np.bool_(t == 0), b1t, b2t, sqsum)
    if program.state_scalars:
        state[slots * n], state[slots * n + 1] = r.b1t, r.b2t
    views = [state[k * n : (k + 1) * n] for k in range(slots)]
    r32 = learners.Round(*(np.float32(x) for x in (r.lr, r.factor, r.b1t, r.b2t, r.scale)))
    p2, new = learners.update(A, spec, program.batch, flat, views, gsum, r32)
    for k, value in enumerate(new):
        state[k * n : (k + 1) * n] = value
    return np.asarray(p2, dtype=np.float32)
