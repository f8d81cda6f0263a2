"""The local deployment tool: start built executables and read their JSON-lines events.

It decides nothing about what is computed; it starts processes and reports what they say.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


@dataclass
class RoleOutcome:
    role: str
    exit_code: int
    refusal: str | None = None
    message: str | None = None
    done: dict[str, object] | None = None
    stderr: str = ""
    events: list[dict[str, object]] = field(default_factory=list)
    device: dict[str, object] | None = None  # a GPU role's `device` event
    kernel_us: int = 0  # a GPU role's kernel time over the rounds it reported
    kernel_rounds: int = 0
    to_device: int | None = None  # bytes a GPU role copied to its device in its newest round
    to_host: int | None = None  # and back (the first round also carries the start's copies)
    first_step: float = 0.0  # a GPU role's first and newest step events (time.monotonic)
    last_step: float = 0.0

    @property
    def ms_per_round(self) -> float | None:
        """Wall time between the first and the newest step event, per round (start-up and
        the first round's set-up excluded)."""
        if self.kernel_rounds < 2:
            return None
        return 1000 * (self.last_step - self.first_step) / (self.kernel_rounds - 1)

    @property
    def kernel_ms_per_round(self) -> float | None:
        return self.kernel_us / 1000 / self.kernel_rounds if self.kernel_rounds else None

    def to_json(self) -> dict[str, object]:
        done = self.done or {}
        gpu: dict[str, object] = {}
        if self.device is not None:
            gpu["device"] = {
                k: self.device.get(k)
                for k in ("target", "shadow", "name", "uuid", "memory", "free", "demand")
            }
            gpu["kernel_ms_per_round"] = self.kernel_ms_per_round
            gpu["ms_per_round"] = self.ms_per_round
            gpu["to_device_per_round"] = self.to_device
            gpu["to_host_per_round"] = self.to_host
        return {
            "role": self.role,
            "exit_code": self.exit_code,
            "refusal": self.refusal,
            "message": self.message,
            "params_sha256": done.get("params_sha256"),
            "final_loss": done.get("final_loss"),
            "holdout_accuracy": done.get("holdout_accuracy"),
            "holdout_mse": done.get("holdout_mse"),
            "params_file": done.get("params_file"),
            **gpu,
        }


def ended(code: int) -> str:
    """How a process ended, as a person reads it: `exited with status 3`, or for a negative
    status (Popen's way of saying a signal) `was killed by signal 15 (SIGTERM)`."""
    if code >= 0:
        return f"exited with status {code}"
    import signal

    try:
        name = f" ({signal.Signals(-code).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-code}{name}"


class LaunchError(Exception):
    """A role's executable cannot be started: `launch-failed`, naming the role and why."""

    name = "launch-failed"


def startable(commands: Sequence[tuple[str, Sequence[str]]]) -> None:
    """Raises LaunchError unless every command's program can be started here."""
    import os
    import shutil

    for role, command in commands:
        program = command[0] if command else ""
        found = shutil.which(program) if os.sep not in program else program
        if not found or not os.path.isfile(found) or not os.access(found, os.X_OK):
            why = "is not installed" if os.sep not in program else "is not an executable file"
            raise LaunchError(f"cannot start {role}: {program or '(no command)'} {why}")


SECRET_BYTES = 32
SECRET_FD_VARIABLE = "ALPHA_SECRET_FD"
LIFELINE_FD_VARIABLE = "ALPHA_LIFELINE_FD"  # runtime/lifeline.c
STOP_GRACE_S = 2.0  # after `stop`'s signal, SIGKILL for a role still there


def new_secret() -> bytes:
    """A fresh launch secret: 256 bits from the operating system's generator."""
    import secrets

    return secrets.token_bytes(SECRET_BYTES)


def _secret_descriptor(secret: bytes) -> int:
    """A pipe holding the secret, its writing end already closed: the role reads the 32 bytes
    and then sees the end. The secret never appears on a command line or in a file."""
    import os

    read_end, write_end = os.pipe()
    try:
        os.write(write_end, secret)  # 32 bytes always fit in a pipe's buffer
    finally:
        os.close(write_end)
    return read_end


class Launch:
    """Every role started at once, each read by a thread of its own; events are passed to
    `on_event` (under one lock) as they are written, and `on_exit` gets each role's exit status
    and whether it was killed. A role can be killed by name (SIGKILL, as a crash would); `wait`
    returns the outcomes in the order of `commands`.

    Every launch has a fresh secret (`secret`, default new_secret()) that its roles prove to
    each other in their handshake: each role inherits a pipe holding it, named by
    ALPHA_SECRET_FD. The launcher keeps no copy once the roles are started.

    The roles die with the launcher, whatever ends it: they form one process group of their
    own (`stop` signals it as a whole, and a terminal's Ctrl-C reaches the launcher alone, which
    then stops them in order), and each inherits the reading end of a lifeline pipe
    (ALPHA_LIFELINE_FD) whose writing end only this process holds: when it is gone, even by
    SIGKILL, the kernel closes it and every role exits (runtime/lifeline.c)."""

    def __init__(
        self,
        commands: Sequence[tuple[str, Sequence[str]]],
        on_event: Callable[[str, dict[str, object]], None] | None = None,
        keep_events: bool = False,
        on_exit: Callable[[str, int, bool], None] | None = None,
        secret: bytes | None = None,
        nice: int = 0,
    ) -> None:
        import os
        import threading

        self._lock = threading.Lock()
        self._on_event = on_event
        self._keep = keep_events
        self._on_exit = on_exit
        self.killed: set[str] = set()
        startable(commands)  # before any role starts: none is left waiting for a peer
        self.roles = [role for role, _ in commands]
        self._procs: dict[str, subprocess.Popen[str]] = {}
        key = new_secret() if secret is None else secret
        if len(key) != SECRET_BYTES:
            raise ValueError(f"a launch secret is {SECRET_BYTES} bytes, not {len(key)}")
        # roles on this machine share the rows they parse from a table (runtime/shared_rows.h)
        self._rows = _rows_folder() if len(commands) > 1 else None
        shared = {SHARED_ROWS_VARIABLE: self._rows} if self._rows else {}
        lifeline, self._lifeline = os.pipe()  # both ends close-on-exec; roles get the first
        self.group = 0  # the roles' process group: the first role's pid
        self.stopped_by: int | None = None  # the signal `stop` sent, if it was called
        try:
            for role, command in commands:
                fd = _secret_descriptor(key)
                try:
                    self._procs[role] = subprocess.Popen(
                        list(command),
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        pass_fds=(fd, lifeline),
                        process_group=self.group,
                        env={
                            **os.environ,
                            SECRET_FD_VARIABLE: str(fd),
                            LIFELINE_FD_VARIABLE: str(lifeline),
                            **shared,
                        },
                    )
                except OSError as e:  # e.g. an executable of another instruction set
                    for started in self._procs.values():
                        started.kill()
                        started.wait()
                    self._close_lifeline()
                    raise LaunchError(f"cannot start {role}: {command[0]}: {e.strerror}") from None
                finally:
                    os.close(fd)
                if not self.group:
                    self.group = self._procs[role].pid
        finally:
            os.close(lifeline)
        del key
        if nice:  # the whole group at once: a face watching them stays responsive
            try:
                os.setpriority(os.PRIO_PGRP, self.group, nice)
            except OSError:
                pass  # a priority is a courtesy, never a reason to refuse a run
        self._outcomes: dict[str, RoleOutcome] = {}
        self._threads = [
            threading.Thread(target=self._read, args=(role,), daemon=True) for role in self.roles
        ]
        for t in self._threads:
            t.start()

    def _read(self, role: str) -> None:
        proc = self._procs[role]
        outcome = RoleOutcome(role, -1)
        assert proc.stdout is not None and proc.stderr is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(event, dict):
                continue
            if self._keep:
                outcome.events.append(event)
            kind = event.get("event")
            if kind == "refused":
                outcome.refusal = str(event.get("name"))
                outcome.message = str(event.get("message"))
            elif kind == "done":
                outcome.done = event
            elif kind == "device":  # a GPU role: its card (or the host shadow), once started
                outcome.device = event
            elif kind == "step" and isinstance(event.get("kernel_us"), int):
                outcome.kernel_us += int(str(event["kernel_us"]))
                outcome.kernel_rounds += 1
                outcome.last_step = time.monotonic()
                if outcome.kernel_rounds == 1:
                    outcome.first_step = outcome.last_step
                for way in ("to_device", "to_host"):
                    if isinstance(event.get(way), int):
                        setattr(outcome, way, int(str(event[way])))
            if self._on_event is not None:
                with self._lock:
                    self._on_event(role, event)
        outcome.stderr = proc.stderr.read()
        outcome.exit_code = proc.wait()
        if outcome.exit_code != 0 and outcome.refusal is None:
            outcome.refusal = "role-crashed"
            outcome.message = f"{role} {ended(outcome.exit_code)} and no named refusal"
        self._outcomes[role] = outcome
        if self._on_exit is not None:
            with self._lock:
                self._on_exit(role, outcome.exit_code, role in self.killed)

    def kill(self, role: str) -> bool:
        """SIGKILL to a role still running; False when it has already ended."""
        proc = self._procs[role]
        if proc.poll() is not None:
            return False
        self.killed.add(role)
        proc.kill()
        return True

    def stop(self, sig: int = 15) -> None:
        """Every role still running gets `sig` (SIGTERM by default) as one process group, and
        SIGKILL after STOP_GRACE_S if it is still there; returns once every role has ended."""
        import os
        import signal
        import time

        self.stopped_by = sig
        if any(proc.poll() is None for proc in self._procs.values()):
            # a group with a member left keeps its id, so this reaches only our roles
            try:
                os.killpg(self.group, sig)
            except ProcessLookupError:  # the last one ended just now
                pass
        deadline = time.monotonic() + STOP_GRACE_S
        for proc in self._procs.values():
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGKILL)
        for t in self._threads:
            t.join()
        self._close_lifeline()

    def _close_lifeline(self) -> None:
        """Once every role has ended (or none will start): the lifeline closed and the
        launch's shared rows removed (imported at the top: this runs from __del__ too, as
        late as interpreter shutdown)."""
        if getattr(self, "_lifeline", -1) >= 0:
            os.close(self._lifeline)
            self._lifeline = -1
        if getattr(self, "_rows", None):
            shutil.rmtree(str(self._rows), ignore_errors=True)
            self._rows = None

    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def pid(self, role: str) -> int | None:
        """The role's process id while it runs (for what it uses, from /proc); else None."""
        proc = self._procs.get(role)
        return proc.pid if proc is not None and proc.poll() is None else None

    def wait(self) -> list[RoleOutcome]:
        for t in self._threads:
            t.join()
        self._close_lifeline()
        return [self._outcomes[role] for role in self.roles]

    def __del__(self) -> None:
        self._close_lifeline()


SHARED_ROWS_VARIABLE = "ALPHA_SHARED_ROWS_DIR"  # runtime/shared_rows.h


def _rows_folder() -> str | None:
    """A folder of this launch's own (mode 0700) where its roles share the rows they parse:
    in /dev/shm, memory every process maps, when there is one; None when none can be made
    (the roles then parse their own)."""
    import os
    import tempfile

    where = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    try:
        return tempfile.mkdtemp(prefix="alpha-rows-", dir=where)
    except OSError:
        return None


def run_role(
    role: str,
    command: Sequence[str],
    on_event: Callable[[str, dict[str, object]], None] | None = None,
    keep_events: bool = False,
    secret: bytes | None = None,
) -> RoleOutcome:
    """Run one executable to its end, passing each event to `on_event` as it arrives."""
    [outcome] = Launch([(role, command)], on_event, keep_events, secret=secret).wait()
    return outcome


def run_roles(
    commands: Sequence[tuple[str, Sequence[str]]],
    on_event: Callable[[str, dict[str, object]], None] | None = None,
    keep_events: bool = False,
    secret: bytes | None = None,
) -> list[RoleOutcome]:
    """Start every role at once (one fresh secret for all of them, unless `secret` is given)
    and wait for all of them; events arrive as they are written."""
    return Launch(commands, on_event, keep_events, secret=secret).wait()


def free_port_base(count: int, host: str = "127.0.0.1") -> int:
    """A base port such that base .. base+count-1 can all be bound on `host` right now, drawn
    outside the kernel's ephemeral range (below it, or above it when there is no room below),
    so that no outgoing connection's source port can take one of them later."""
    import random
    import socket

    from alpha_core.support.ports import HIGHEST_PORT, ephemeral_range

    low, high = ephemeral_range()
    floor = 20_000 if low - count > 20_000 else 1024  # clear of well-known services
    below = (floor, low - count + 1)  # [start, stop) of bases whose ports all lie below it
    above = (high + 1, HIGHEST_PORT - count + 2)
    start, stop = below if below[0] < below[1] else above
    if start >= stop:
        raise LaunchError(f"no {count} consecutive ports outside the ephemeral range {low}..{high}")
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(start, stop)
        sockets = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                sockets.append(s)
                s.bind((host, port))
            return base
        except OSError:
            continue
        finally:
            for s in sockets:
                s.close()
    raise LaunchError(f"no {count} consecutive free ports on {host} in {start}..{stop + count - 2}")


def command_for(path: str, target: str) -> list[str]:
    """How to start an executable of `target` on this machine (qemu for another ISA)."""
    import platform

    here = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}
    # a GPU role ("gpu h200", "gpu h200 (shadow)") is an x86-64 process of this machine's
    if target.startswith("gpu ") or here.get(platform.machine().lower()) == target:
        return [path]
    return [f"qemu-{target}", path]
