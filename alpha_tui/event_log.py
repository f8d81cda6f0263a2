"""A role's events as log lines, and the filter a user types over them (like k9s's `/`):
space-separated terms that must all appear (case-insensitive), a term starting with `-` must
not, and `kind:NAME` keeps only that kind of event (`kind:checkpoint`, `-kind:step`)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from alpha_core.support.sizes import human_bytes, show_loss


def line(event: dict[str, object]) -> str:
    """One event as a short line: its kind, then what matters about it."""
    kind = str(event.get("event"))
    if kind == "step":
        adds = event.get("combine")
        combine = f" combine {len(adds)}" if isinstance(adds, list) else ""
        loss = event.get("loss")
        value = show_loss(float(loss)) if isinstance(loss, int | float) else "–"
        traffic = event.get("bytes")
        moved = human_bytes(traffic) if isinstance(traffic, int) else "0 B"
        return (
            f"step {event.get('step')}: loss {value} (bits {event.get('loss_bits')}), "
            f"{event.get('frames')} frames, {moved}{combine}"
        )
    if kind == "checkpoint":
        published = " published" if event.get("published") is True else ""
        size = event.get("bytes")
        shown = human_bytes(size) if isinstance(size, int) else "?"
        return (
            f"checkpoint round {event.get('round')}{published}: {event.get('files')} file(s), "
            f"{shown} in {event.get('write_ms')} ms"
        )
    if kind == "resumed":
        return f"resumed at round {event.get('round')} from {event.get('capture')}"
    if kind == "refused":
        return f"refused {event.get('name')}: {event.get('message')}"
    if kind == "done":
        loss = event.get("final_loss")
        value = show_loss(float(loss)) if isinstance(loss, int | float) else "–"
        return f"done: final loss {value}, sha256 {event.get('params_sha256', '–')}"
    if kind == "links":
        links = event.get("links")
        carried = [
            f"{link.get('peer')} over {link.get('transport')}"
            + (" (shared pages)" if link.get("shared_pages") else "")
            for link in (links if isinstance(links, list) else [])
            if isinstance(link, dict)
        ]
        return "links: " + (", ".join(carried) or "none")
    if kind == "data":
        how = (
            "mapped from another role of the launch"
            if event.get("shared") is True
            else f"{event.get('parsed')} parsed"
        )
        return f"data: {event.get('rows')} rows, {how}"
    if kind == "start":
        return (
            f"start: system {event.get('system')}, {event.get('params')} parameters, "
            f"{event.get('steps')} steps, {event.get('leaves')} leaves"
        )
    rest = {k: v for k, v in event.items() if k not in ("event", "role")}
    return f"{kind}: {json.dumps(rest, separators=(',', ':'))}"


def matches(event: dict[str, object], text: str, terms: list[str]) -> bool:
    kind = str(event.get("event"))
    lowered = text.lower()
    for term in terms:
        negate = term.startswith("-") and len(term) > 1
        word = term[1:] if negate else term
        if word.startswith("kind:"):
            hit = kind == word[5:]
        else:
            hit = word in lowered
        if hit == negate:
            return False
    return True


def filtered(events: Iterable[dict[str, object]], query: str, limit: int) -> list[str]:
    """The newest `limit` lines of `events` that pass `query`, oldest first."""
    terms = query.lower().split()
    lines = [text for e in events if matches(e, text := line(e), terms)]
    return lines[-limit:]


def newer(events: list[dict[str, object]], last: dict[str, object] | None) -> int | None:
    """Where the events after `last` (the newest one already shown, by identity) begin in
    `events`; None when it is no longer there (so everything must be shown again)."""
    if last is None:
        return None
    for k in range(len(events) - 1, -1, -1):
        if events[k] is last:
            return k + 1
    return None
