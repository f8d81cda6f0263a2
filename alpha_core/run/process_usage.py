"""What a running role's process uses, read from /proc as top and nvitop read it: its CPU (the
share of one core its threads used since the previous sample, so 180% is nearly two cores) and
its resident memory. Faces that watch a run (alpha-tui) sample it; nothing here decides."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Usage:
    cpu_percent: float | None  # None until two samples are far enough apart
    rss: int | None  # bytes; None when the process is gone


def _cpu_seconds(pid: int) -> float | None:
    try:
        stat = open(f"/proc/{pid}/stat", "rb").read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the name may hold spaces: after its `)`
    return (int(fields[11]) + int(fields[12])) / _TICKS  # utime + stime


def _rss(pid: int) -> int | None:
    try:
        statm = open(f"/proc/{pid}/statm", "rb").read().split()
    except OSError:
        return None
    return int(statm[1]) * _PAGE


class ProcessUsage:
    """Samples processes by pid; CPU is averaged over at least `interval` seconds, so a redraw
    ten times a second does not make it jump."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (time, cpu seconds)
        self._shown: dict[int, Usage] = {}

    def sample(self, pid: int, now: float | None = None) -> Usage:
        now = time.monotonic() if now is None else now
        cpu, rss = _cpu_seconds(pid), _rss(pid)
        if cpu is None or rss is None:
            self._last.pop(pid, None)
            self._shown.pop(pid, None)
            return Usage(None, None)
        last = self._last.get(pid)
        if last is None:
            self._last[pid] = (now, cpu)
            self._shown[pid] = Usage(None, rss)
        elif now - last[0] >= self.interval:
            self._last[pid] = (now, cpu)
            self._shown[pid] = Usage(100.0 * (cpu - last[1]) / (now - last[0]), rss)
        else:
            self._shown[pid] = Usage(self._shown[pid].cpu_percent, rss)
        return self._shown[pid]
