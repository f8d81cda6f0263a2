"""Whether the roles of a run agree, round by round, read off their step events: every role
reports the same loss (to the bit), and the additions they report (`combine`, in each step
event) are together exactly the canonical tree over the round's leaves, each node split where
the tree splits it. A run whose roles agree in every round computes the single-process sum.

A face shows the verdicts; it decides nothing about them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from alpha_core.lower.tree import internal_nodes, split

KEPT_ROUNDS = 4096  # rounds waiting for a slow role's report, at most


@dataclass(frozen=True)
class Verdict:
    round: int
    agree: bool
    why: str = ""  # when they do not: the first difference found
    role: str | None = None  # the role that differs, when one does


@dataclass
class Agreement:
    roles: tuple[str, ...]
    leaves: int = 0  # from the start events; 0 until one is seen
    pending: dict[int, dict[str, tuple[str, tuple[str, ...]]]] = field(default_factory=dict)
    checked: int = 0  # rounds every role has reported and that were compared
    newest: Verdict | None = None
    first_disagreement: Verdict | None = None

    def start(self, event: dict[str, object]) -> None:
        leaves = event.get("leaves")
        if isinstance(leaves, int) and leaves > 0:
            self.leaves = leaves

    def step(self, role: str, event: dict[str, object]) -> None:
        """A role's step event: its round's loss bits and additions."""
        at = event.get("step")
        if not isinstance(at, int):
            return
        combine = event.get("combine")
        adds = tuple(str(c) for c in combine) if isinstance(combine, list) else ()
        reports = self.pending.setdefault(at, {})
        reports[role] = (str(event.get("loss_bits")), adds)
        if len(reports) == len(self.roles):
            del self.pending[at]
            self._judge(at, reports)
        while len(self.pending) > KEPT_ROUNDS:  # a role that stopped reporting
            del self.pending[min(self.pending)]

    def _judge(self, at: int, reports: dict[str, tuple[str, tuple[str, ...]]]) -> None:
        verdict = judge(at, reports, self.leaves)
        self.checked += 1
        self.newest = verdict
        if not verdict.agree and self.first_disagreement is None:
            self.first_disagreement = verdict

    def mark(self, role: str) -> str:
        """What the table shows for `role`: `✓ R` while every round up to R agreed, `✗ R`
        from the first round that did not (on the role that differed, or every role)."""
        bad = self.first_disagreement
        if bad is not None:
            return f"✗ {bad.round}" if bad.role in (None, role) else f"✓ <{bad.round}"
        return f"✓ {self.newest.round}" if self.newest is not None else "–"


def judge(at: int, reports: dict[str, tuple[str, tuple[str, ...]]], leaves: int) -> Verdict:
    """The verdict on one round from every role's (loss bits, additions)."""
    bits = {b for b, _ in reports.values()}
    if len(bits) > 1:
        counts = {b: sum(1 for v, _ in reports.values() if v == b) for b in bits}
        odd = min(counts, key=lambda b: counts[b])
        role = next(r for r, (b, _) in reports.items() if b == odd)
        return Verdict(
            at, False, f"{role} reports loss bits {odd}, the others {bits - {odd}}", role
        )
    if leaves <= 0:
        return Verdict(at, True)
    seen: dict[tuple[int, int], int] = {}
    for role, (_, adds) in reports.items():
        for add in adds:
            node = _parse(add)
            if node is None:
                return Verdict(at, False, f"{role} reports an addition `{add}`", role)
            lo, mid, hi = node
            if hi - lo < 2 or mid != split(lo, hi):
                return Verdict(
                    at, False, f"{role} added [{lo}, {hi}) at {mid}, not the canonical tree", role
                )
            seen[(lo, hi)] = mid
    missing = [n for n in internal_nodes(leaves) if n not in seen]
    if missing:
        lo, hi = missing[0]
        return Verdict(at, False, f"no role added node [{lo}, {hi}) of the canonical tree")
    extra = sorted(set(seen) - set(internal_nodes(leaves)))
    if extra:
        lo, hi = extra[0]
        return Verdict(at, False, f"node [{lo}, {hi}) is not in the canonical tree")
    return Verdict(at, True)


def _parse(add: str) -> tuple[int, int, int] | None:
    """`lo:hi=lo:mid+mid:hi` to (lo, mid, hi); None when it is not that."""
    try:
        node, _, parts = add.partition("=")
        left, _, right = parts.partition("+")
        lo, hi = (int(x) for x in node.split(":"))
        a, mid = (int(x) for x in left.split(":"))
        mid2, b = (int(x) for x in right.split(":"))
    except ValueError:
        return None
    if (a, b) != (lo, hi) or mid != mid2:
        return None
    return lo, mid, hi
