"""The core never imports a face's libraries: checked in a fresh interpreter, every module."""

from __future__ import annotations

import json
import subprocess
import sys

FACE_LIBRARIES = ("rich", "textual", "pygls")

PROGRAM = """
import importlib, json, pkgutil, sys
import alpha_core
names = ["alpha_core"]
for info in pkgutil.walk_packages(alpha_core.__path__, "alpha_core."):
    importlib.import_module(info.name)
    names.append(info.name)
faces = sorted(m for m in sys.modules if m.split(".")[0] in {faces!r})
print(json.dumps({{"imported": names, "faces": faces}}))
"""


def test_the_core_imports_no_face_library() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(faces=set(FACE_LIBRARIES))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["faces"] == []
    # the walk really reached the phases, not just the package
    for phase in (
        "syntax.parser",
        "check.system",
        "diagnostics.render",
        "query.refusal_docs",
        "workspace.analysis",
    ):
        assert f"alpha_core.{phase}" in report["imported"]
