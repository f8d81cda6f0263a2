"""Slurm's own commands (salloc, scontrol, sbcast, srun, scancel), run as subprocesses; a
failure is `slurm-failed`, naming the command and what Slurm said."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping, Sequence

COMMAND_TIMEOUT_S = 600.0  # an allocation may wait in the queue; beyond this it is a failure


class SlurmError(Exception):
    """A Slurm command failed or is not installed: `slurm-failed`."""

    name = "slurm-failed"


def run_slurm(
    argv: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """The command's result; SlurmError when it cannot start, fails or runs past `timeout`."""
    if shutil.which(argv[0]) is None:
        raise SlurmError(
            f"`{argv[0]}` is not installed here: alpha deploy slurm needs Slurm's "
            "client commands on the submitting machine"
        )
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{' '.join(argv)}` did not finish within {timeout:.0f} s") from None
    except OSError as e:
        raise SlurmError(f"cannot run `{argv[0]}`: {e.strerror}") from None
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        last = said[-1] if said else f"exit status {done.returncode}"
        raise SlurmError(f"`{' '.join(argv)}` failed: {last}")
    return done
