"""Bounded memo tables: least recently used first out, by entries and by weight.

Every memo of the core is one of these, so that a long editing session holds a bounded amount:
a table keeps at most `entries` entries and at most `weight` units of them, a unit being about
one character of the source an entry was computed from (an entry's memory grows with that
text). A single entry heavier than the whole budget is not kept at all. `stats` says what a
table holds now, and `live_tables` every table of the process, for tests and benchmarks that
count live entries rather than measure memory.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True)
class MemoStats:
    name: str
    entries: int
    weight: int
    max_entries: int
    max_weight: int
    hits: int
    misses: int


class CacheInfo(NamedTuple):
    """What `functools.lru_cache` reports, for the callers that read it."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


_TABLES: weakref.WeakSet[Lru[Any, Any]] = weakref.WeakSet()


class Lru(Generic[K, V]):
    """A memo table bounded by entries and by total weight."""

    def __init__(self, name: str, entries: int, weight: int) -> None:
        self.name = name
        self.max_entries = entries
        self.max_weight = weight
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self.weight = 0
        self.hits = 0
        self.misses = 0
        _TABLES.add(self)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: K) -> V | None:
        kept = self._entries.get(key)
        if kept is None:
            self.misses += 1
            return None
        self.hits += 1
        self._entries.move_to_end(key)
        return kept[0]

    def put(self, key: K, value: V, weight: int = 1) -> None:
        old = self._entries.pop(key, None)
        if old is not None:
            self.weight -= old[1]
        if weight > self.max_weight:
            return
        self._entries[key] = (value, weight)
        self.weight += weight
        while len(self._entries) > self.max_entries or self.weight > self.max_weight:
            _, (_, w) = self._entries.popitem(last=False)
            self.weight -= w

    def clear(self) -> None:
        self._entries.clear()
        self.weight = 0

    def stats(self) -> MemoStats:
        return MemoStats(
            self.name,
            len(self._entries),
            self.weight,
            self.max_entries,
            self.max_weight,
            self.hits,
            self.misses,
        )


def memoized(
    name: str, entries: int, weight: int, weigh: Callable[..., int]
) -> Callable[[Callable[..., V]], MemoFunction[V]]:
    """A function memoized by its (hashable) arguments in an `Lru`; `weigh(*args)` weighs an
    entry. Like `functools.lru_cache`, with `cache_info` and `cache_clear`."""

    def wrap(fn: Callable[..., V]) -> MemoFunction[V]:
        return MemoFunction(fn, Lru(name, entries, weight), weigh)

    return wrap


class MemoFunction(Generic[V]):
    def __init__(self, fn: Callable[..., V], table: Lru[Any, V], weigh: Callable[..., int]):
        self.fn = fn
        self.table = table
        self.weigh = weigh
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any) -> V:
        found = self.table._entries.get(args)
        if found is not None:
            self.table.hits += 1
            self.table._entries.move_to_end(args)
            return found[0]
        self.table.misses += 1
        value = self.fn(*args)
        self.table.put(args, value, self.weigh(*args))
        return value

    def cache_info(self) -> CacheInfo:
        t = self.table
        return CacheInfo(t.hits, t.misses, t.max_entries, len(t))

    def cache_clear(self) -> None:
        self.table.clear()


def live_tables() -> list[MemoStats]:
    """Every memo table alive in this process, by name."""
    return sorted((t.stats() for t in list(_TABLES)), key=lambda s: s.name)
