"""What a system's identity is made of, and what differs between two.

A capture's manifest names the system identity it was made by (the SHA-256 of the system's
canonical text, `check/program.py`), nothing more. So that a resume or an evaluation of a
capture made by another version of the system can say what differs (`steps: 300 → 600`,
`lr: 0.1 → 0.2`) before anything is compiled, every build keeps its system's canonical text
in the object cache, by identity: `<ALPHA_CACHE_DIR or ~/.cache/alpha>/identities/<identity>.txt`
(its SHA-256 is its name, so a reader needs no other trust); a run's record keeps it too
(`summary.json`, beside its `checkpoints/`), for a run folder brought from another machine.
A capture whose text is in neither (made before alpha kept them, or elsewhere) still reads:
its difference is then given by identity only. The checkpoint folder itself holds captures
alone, as the runtime lays them out.

The canonical text is also what a run's record calls its configuration
(`alpha_core.run.record`), so that `alpha runs compare` names differences the same way.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from alpha_core.check.program import UNFUSED, Program
from alpha_core.checkpoint.folder import locate
from alpha_core.checkpoint.pack import TOP, TRAILER, PackError, split
from alpha_core.checkpoint.reader import CheckpointError
from alpha_core.diagnostics import Diagnostic

IDENTITIES = "identities"  # the folder of canonical texts beside the captures
MANIFEST_LIMIT = 64 << 20  # a top manifest larger than this is not read here (the runtime will)
MODEL_SHOWN = 3  # graph nodes named one by one before they are counted


def configuration(canonical: str) -> dict[str, str]:
    """The items of a canonical text, by name, in its order: `system`, `data` and each of its
    fields (`data rows`, `data sha256`, …), `batch`, `leaves`, `shuffle`, `param NAME`, each
    graph node (`model %3`), `output`, `loss`, `learner` and each hyper-parameter by its own
    name (`lr`, `beta1`, …), `schedule`, `clip`, `steps`. A line this does not know is kept
    whole under its first word."""
    items: dict[str, str] = {}
    for line in canonical.splitlines():
        head, _, rest = line.partition(" ")
        if head == "data":
            kind, *fields = rest.split(" ")
            items["data"] = kind
            for f in fields:
                key, _, value = f.partition("=")
                items[f"data {key}"] = value
        elif head == "batch":
            words = rest.split(" ")
            items["batch"] = words[0]
            for key, value in zip(words[1::2], words[2::2], strict=False):
                items[key] = value
        elif head == "param":
            name, _, spec = rest.partition(" ")
            items[f"param {name}"] = spec.replace("InitSpec(", "init(")
        elif head.startswith("%"):
            items[f"model {head}"] = rest.removeprefix("= ")
        elif head == "loss":
            kind, _, smoothing = rest.partition(" smoothing=")
            items["loss"] = kind
            if smoothing:
                items["smoothing"] = smoothing
        elif head == "learner":
            items.update(_learner(rest))
        else:
            items[head] = rest
    items.setdefault("arithmetic", UNFUSED)  # the text names only a fused system's
    return items


def _learner(text: str) -> dict[str, str]:
    """`sgd (('lr', 0.1),) schedule … clip 1.0` → learner, lr, schedule, clip."""
    rest, _, clip = text.partition(" clip ")
    rest, _, schedule = rest.partition(" schedule ")
    kind, _, hyper = rest.partition(" ")
    items = {"learner": kind}
    try:
        pairs = ast.literal_eval(hyper) if hyper else ()
        for name, value in pairs:
            items[str(name)] = repr(value)
    except (ValueError, SyntaxError, TypeError):
        items["learner"] = text  # not the shape written today: compared whole
        return items
    if schedule:
        items["schedule"] = schedule
    if clip:
        items["clip"] = clip
    return items


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Each item that differs, `name: before → after` (`(none)` for an item one side lacks),
    in the order of `after` then of `before`. Graph nodes past the first MODEL_SHOWN that
    differ are counted in one line, not listed."""
    lines: list[str] = []
    nodes = 0
    for key in [*after, *(k for k in before if k not in after)]:
        old, new = before.get(key, "(none)"), after.get(key, "(none)")
        if old == new:
            continue
        if key.startswith("model "):
            nodes += 1
            if nodes > MODEL_SHOWN:
                continue
        lines.append(f"{key}: {old} → {new}")
    if nodes > MODEL_SHOWN:
        lines.append(f"model: {nodes - MODEL_SHOWN} more graph nodes differ")
    return lines


# ---- the canonical texts, by identity ---------------------------------------------------------


def identities_folder() -> Path:
    from alpha_core.link.toolchain import cache_root

    return cache_root() / IDENTITIES


def record_canonical(program: Program) -> Path | None:
    """Keeps the system's canonical text in the cache's identities/, or None when it cannot
    be written (a cache that cannot be written is refused by the build itself)."""
    canonical = program.canonical()
    path = identities_folder() / f"{program.identity()}.txt"
    try:
        if path.is_file():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        partial.write_text(canonical, encoding="utf-8")
        os.replace(partial, path)
    except OSError:
        return None
    return path


def recorded_canonical(capture: Path, identity: str) -> str | None:
    """The canonical text of `identity`: from the cache, or from the record of the run whose
    `checkpoints/` holds the capture folder `capture`; None when neither has it."""
    folder = capture.parent
    try:
        data = (identities_folder() / f"{identity}.txt").read_bytes()[: MANIFEST_LIMIT + 1]
        if hashlib.sha256(data).hexdigest() == identity:
            return data.decode("utf-8", errors="replace")
    except OSError:
        pass
    try:  # a run's record (alpha_core.run.record) names its configuration's canonical text
        summary = json.loads((folder.parent / "summary.json").read_text(encoding="utf-8"))
        text = summary.get("canonical") if isinstance(summary, dict) else None
    except (OSError, ValueError):
        return None
    if isinstance(text, str) and hashlib.sha256(text.encode()).hexdigest() == identity:
        return text
    return None


@dataclass(frozen=True)
class CaptureIdentity:
    capture: Path  # the capture folder (round-<R>)
    system: str
    identity: str
    round: int
    arithmetic: str = UNFUSED  # a fused capture's manifest names it; an unfused one does not


def capture_identity(path: Path) -> CaptureIdentity | None:
    """The system, identity and round the newest capture at `path` names (its top manifest,
    read from the end of top.pack without reading its shards), or None when it cannot be read
    here: the runtime then refuses it by name, as it always has."""
    try:
        capture, _ = locate(path)
        fd = os.open(capture / TOP, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (CheckpointError, OSError):
        return None
    try:
        import stat

        size = os.fstat(fd).st_size
        if not stat.S_ISREG(os.fstat(fd).st_mode) or size < TRAILER:
            return None
        tail = min(size, MANIFEST_LIMIT + TRAILER)
        data = os.pread(fd, tail, size - tail)
        manifest = json.loads(split(data, MANIFEST_LIMIT).manifest)
        return CaptureIdentity(
            capture,
            str(manifest["system"]),
            str(manifest["identity"]),
            int(manifest["round"]),
            str(manifest.get("arithmetic", UNFUSED)),
        )
    except (OSError, PackError, ValueError, KeyError, TypeError):
        return None
    finally:
        os.close(fd)


def identity_refusal(path: str | Path, program: Program, doing: str) -> Diagnostic | None:
    """`checkpoint-identity-mismatch` when the capture at `path` was made by another system
    than `program` (which `doing`, `resume` or `evaluate`, would build), naming what differs;
    None when they are the same, or when the capture cannot be read here."""
    held = capture_identity(Path(path))
    if held is None or held.identity == program.identity():
        return None
    where = f"the capture {held.capture} (round {held.round:,})"
    if held.arithmetic != program.arithmetic:
        return Diagnostic(
            "arithmetic-mismatch",
            f"cannot {doing} {where}: it was made by system `{held.system}` of arithmetic "
            f"{held.arithmetic}, and the source gives `{program.name}` of arithmetic "
            f"{program.arithmetic}",
            None,
            help="nothing was built; declare the arithmetic the capture was made with "
            f"(`arithmetic {held.arithmetic}`), or run from the start",
        )
    canonical = recorded_canonical(held.capture, held.identity)
    if canonical is None:
        what = (
            f"was made by system `{held.system}` of identity {held.identity}, and the source "
            f"gives `{program.name}` of identity {program.identity()}; what it was made of is "
            "not kept here (made on another machine, or before alpha kept it), so the "
            "differing items cannot be named"
        )
    else:
        changed = differences(configuration(canonical), configuration(program.canonical()))
        what = (
            f"was made by another version of system `{held.system}` (capture → source): "
            + "; ".join(changed)
        )
    return Diagnostic(
        "checkpoint-identity-mismatch",
        f"cannot {doing} {where}: it {what}",
        None,
        help="nothing was built; use the source, --steps and --checkpoint-every the capture "
        "was made with, or run from the start",
    )
