"""alpha-tui's pane switches as a person sees them: the real `alpha-tui` in a real terminal
(tmux, 80x24) during an 8-role run of `examples/digits.alpha --plan tree` that keeps both
cores busy. Each key goes in with `tmux send-keys`; the time is until `tmux capture-pane`
shows what the key opens (the events pane's filter, the projection's schedule, the memory
admission's headroom, the device line, the role table again). The peer in the same run is a
key that does nothing (`x`): the time until a capture is taken after it measures what tmux and
the capture cost, without a redraw to wait for.

    .venv/bin/python bench/tui_latency.py [--repeats N] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import machine  # noqa: E402

TUI = str(Path(sys.executable).parent / "alpha-tui")
SOCKET = f"alpha-bench-{os.getpid()}"

# key -> what the screen shows once the key has been answered
SWITCHES: tuple[tuple[str, str, str], ...] = (
    ("Enter", "open a role's panes (events)", "filter: words"),
    ("p", "projection tab", "each round:"),
    ("m", "memory tab", "headroom"),
    ("d", "device tab", "runs on a host"),
    ("e", "events tab", "filter: words"),
    ("Escape", "back to the role table", " role       round"),
)


def tmux(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"tmux {args[0]}: {done.stderr.strip()}")
    return done.stdout


def pane() -> str:
    return tmux("capture-pane", "-p", "-t", "t")


def until(marker: str, seconds: float = 120) -> float:
    start = time.monotonic()
    while marker not in pane():
        if time.monotonic() - start > seconds:
            raise SystemExit(f"timed out waiting for {marker!r}:\n{pane()}")
        time.sleep(0.002)
    return time.monotonic() - start


def press(key: str, marker: str) -> float:
    start = time.monotonic()
    tmux("send-keys", "-t", "t", key)
    while marker not in pane():
        if time.monotonic() - start > 30:
            raise SystemExit(f"{key}: timed out waiting for {marker!r}:\n{pane()}")
        time.sleep(0.002)
    return time.monotonic() - start


def floor() -> float:
    """A key bound to nothing, then one capture: the cost of the measuring itself."""
    start = time.monotonic()
    tmux("send-keys", "-t", "t", "x")
    pane()
    return time.monotonic() - start


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def app_cpu(pid: int, seconds: float = 5.0) -> float:
    """The share of one core alpha-tui itself used over `seconds`."""
    start = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - start) / seconds


def busy_cores() -> float:
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed: scripts/system-packages.sh installs it")
    command = ["env", "-u", "COLUMNS", "-u", "LINES", TUI, str(ROOT / "examples/digits.alpha")]
    command += ["--plan", "tree", "--steps", "2000000"]
    tmux("new-session", "-d", "-x", "80", "-y", "24", "-s", "t", subprocess.list2cmdline(command))
    tmux("resize-window", "-t", "t", "-x", "80", "-y", "24")
    try:
        until("no run yet")
        tmux("send-keys", "-t", "t", "r")
        until("/s ")  # every role has a rate: the run is under way
        time.sleep(3)
        times: dict[str, list[float]] = {key: [] for key, _, _ in SWITCHES}
        floors: list[float] = []
        for _ in range(args.repeats):
            for key, _, marker in SWITCHES:
                times[key].append(press(key, marker))
                time.sleep(0.4)
            floors.append(floor())
            time.sleep(0.2)
        pid = int(tmux("list-panes", "-t", "t", "-F", "#{pane_pid}").split()[0])
        main_cpu = app_cpu(pid)
        press("Enter", "filter: words")
        panes_cpu = app_cpu(pid)
        press("Escape", " role       round")
        load = busy_cores()
        screen = pane()
        tmux("send-keys", "-t", "t", "q")
        time.sleep(2)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    cpu = str(machine()["cpu"])
    print(f"machine: {cpu}, {os.cpu_count()} cores, 1-minute load {load:.2f} during the run")
    print(f"alpha-tui at 80x24, 8 roles running; {args.repeats} presses of each key")
    print(f"{'key':<8} {'what it opens':<32} {'median':>8} {'max':>8}")
    result: dict[str, object] = {"cpu": cpu, "load": load, "repeats": args.repeats}
    for key, what, _ in SWITCHES:
        t = times[key]
        median, worst = statistics.median(t) * 1000, max(t) * 1000
        print(f"{key:<8} {what:<32} {median:>6.0f}ms {worst:>6.0f}ms")
        result[key] = {"median_ms": median, "max_ms": worst}
    f = statistics.median(floors) * 1000
    print(f"{'x':<8} {'nothing (send + one capture)':<32} {f:>6.0f}ms {max(floors) * 1000:>6.0f}ms")
    result["floor_ms"] = f
    print(
        f"alpha-tui's own CPU: {main_cpu:.0%} of a core on the role table, "
        f"{panes_cpu:.0%} with a role's events pane open"
    )
    result["cpu_main"], result["cpu_panes"] = main_cpu, panes_cpu
    rates = [line for line in screen.splitlines() if "/s " in line]
    print(f"rows with a rate on the last screen: {len(rates)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
