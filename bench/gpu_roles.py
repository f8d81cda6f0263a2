"""GPU roles on a machine without a GPU: what they cost to build and start, and the host shadow.

Measures, for examples/digits.alpha on one role (`solo`, one worker):
- the GPU role executable (glibc-dynamic, PTX inside) and its host shadow: size, PTX bytes,
  kernel count, build time;
- start-up: the time from exec to the `device` event and to the first step event (the shadow;
  a real GPU role here refuses gpu-driver-missing, whose time is reported too);
- the shadow's round time against the host build of the same plan (the shadow runs each GPU
  thread as a call: it is a control for bits, not a way to train).

    .venv-test/bin/python bench/gpu_roles.py [--json OUT]

scripts/qualify-gpu measures the same on a machine with an NVIDIA GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLO = """
plan solo for digits {
  roles worker[1]
  topology hierarchy(fanout: 2)
}
pairing one_gpu for solo {
  worker[*]: host x86_64, gpu h200
}
"""


def _alpha(*args: str) -> dict[str, object]:
    t = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "alpha_cli.main", *args, "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    body = json.loads(done.stdout)
    body["seconds"] = time.perf_counter() - t
    return dict(body)


def _start(exe: str, *args: str) -> dict[str, float | int | str]:
    """Seconds from exec to the device event, the first step and the end."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([exe, *args], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    marks: dict[str, float | int | str] = {}
    for line in proc.stdout:
        event = json.loads(line)
        kind = event.get("event")
        if kind == "device" and "device_s" not in marks:
            marks["device_s"] = time.perf_counter() - t0
        if kind == "step" and "first_step_s" not in marks:
            marks["first_step_s"] = time.perf_counter() - t0
        if kind == "refused":
            marks["refused"] = str(event.get("name"))
    marks["exit"] = proc.wait()
    marks["total_s"] = time.perf_counter() - t0
    return marks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    results: dict[str, object] = {"load": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="alpha-bench-gpu-") as temp:
        src = Path(temp) / "digits.alpha"
        text = (ROOT / "examples" / "digits.alpha").read_text()
        src.write_text(text.replace('"data/', f'"{ROOT}/examples/data/') + SOLO)
        for name, extra in (("gpu", []), ("shadow", ["--gpu-shadow"]), ("host", [])):
            pairing = [] if name == "host" else ["--pairing", "one_gpu"]
            out = str(Path(temp) / name)
            built = _alpha("build", str(src), "--plan", "solo", *pairing, *extra, "-o", out)
            exe = built["executables"][0]  # type: ignore[index]
            results[name] = {
                "target": exe["target"],
                "bytes": exe["size"],
                "build_s": round(float(str(built["seconds"])), 2),
                **_start(exe["path"], "--params-out", str(Path(out) / "p")),
            }
            steps = 300
            if name != "gpu":
                results[name]["ms_per_round"] = round(  # type: ignore[index]
                    (float(results[name]["total_s"]) / steps) * 1000,
                    3,  # type: ignore[index]
                )
    for name in ("gpu", "shadow", "host"):
        print(name, json.dumps(results[name]))
    shadow, host = results["shadow"], results["host"]
    ratio = float(shadow["ms_per_round"]) / float(host["ms_per_round"])  # type: ignore[index]
    print(f"shadow / host round time: {ratio:.1f}x  (load {results['load']})")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
