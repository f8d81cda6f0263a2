"""The core never imports a face's libraries: checked in a fresh interpreter, every module."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

FACE_LIBRARIES = ("rich", "textual", "pygls")
ROOT = Path(__file__).resolve().parents[1]

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


# ---- the pipeline's packages, bottom up: a package imports only the packages before it ----------

LAYERS = (
    "support",  # files, memo tables, sizes, spans, version, ports: nothing of the language
    "diagnostics",  # the refusal registry and its rendering
    "syntax",  # grammar, parser, ast, formatter
    "ir",  # the tensor graph
    "semantics",  # arithmetic recipes, interpreted by NumPy and by LLVM
    "data",  # tables, sequences, synthetic sources
    "ops",  # the table of operations
    "check",  # names, types, shapes: a Program
    "autodiff",  # the training step's graph
    "lower",  # lowering decisions without LLVM: live nodes, blocking, batching, the tree
    "plan",  # plans, pairings, projection, admission
    "codegen",  # LLVM IR for the host and the GPU
    "link",  # toolchain, objects, linking
    "checkpoint",  # the checkpoint format
    "build",  # a choice's executables and manifest
    "workspace",  # a file analysed whole, incrementally
    "run",  # launching, run state, captures
    "deploy",  # Slurm and Kubernetes
    "query",  # what the faces ask of an analysis
)


def _imports_of(path: Path, module: str, prefix: str = "alpha_core.") -> list[tuple[int, str]]:
    """Every alpha_core module a file imports (at any depth: local and TYPE_CHECKING imports
    count, since a name's type is a dependency too), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return [(line, name) for line, name in found if name.startswith(prefix)]


def _layer(name: str) -> str | None:
    parts = name.split(".")
    if len(parts) < 2:
        return None
    return parts[1] if len(parts) > 2 or (ROOT / "alpha_core" / parts[1]).is_dir() else None


def test_packages_import_only_downwards_in_pipeline_order() -> None:
    core = ROOT / "alpha_core"
    loose = sorted(p.name for p in core.glob("*.py") if p.name != "__init__.py")
    assert loose == [], f"modules at alpha_core's root belong in a package: {loose}"
    packages = sorted(p.name for p in core.iterdir() if (p / "__init__.py").exists())
    assert sorted(LAYERS) == packages, "every package has its place in LAYERS"
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward: list[str] = []
    for path in sorted(core.rglob("*.py")):
        if path.parent == core:
            continue  # alpha_core/__init__.py
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        mine = _layer(module)
        assert mine is not None
        for line, name in _imports_of(path, module):
            theirs = _layer(name)
            if theirs is not None and rank[theirs] > rank[mine]:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({mine}) imports {name} ({theirs})")
    assert upward == [], "imports against the pipeline's order:\n" + "\n".join(upward)


def test_checking_a_file_loads_no_llvm() -> None:
    """`alpha check` (and the editor's checks) never import llvmlite: checking asks the
    lowering decisions (alpha_core.lower), never the code generator."""
    program = (
        "import sys\n"
        "from alpha_cli.main import main\n"
        f"code = main(['check', {str(ROOT / 'examples' / 'digits.alpha')!r}])\n"
        "print('LLVM' if any(m.split('.')[0] == 'llvmlite' for m in sys.modules) else 'none')\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "none"


def test_no_lsp_feature_imports_the_module_that_registers_it() -> None:
    """alpha_lsp/server.py registers every feature; the features share alpha_lsp/kernel.py."""
    faces = ROOT / "alpha_lsp"
    back = [
        f"{path.name}:{line}"
        for path in sorted(faces.glob("*.py"))
        if path.name not in ("server.py", "__main__.py")
        for line, name in _imports_of(path, f"alpha_lsp.{path.stem}", "alpha_lsp.")
        if name.startswith("alpha_lsp.server")
    ]
    assert back == []
