"""The VS Code extension (vscode-extension/): it compiles with tsc and bundles with esbuild, its
editor-free parts, its commands, tasks and status item (the bundle activated against a stand-in
`vscode` module, test/vscode-stand-in.js) and the TextMate grammar pass their tests, the `$alpha`
problem matcher reads what `alpha check` really prints, and a plain `vsce package` (no flags)
makes a .vsix that holds what VS Code loads (manifest, the bundle, grammar, language
configuration, README, LICENSE, icon) and nothing else. VS Code itself cannot run here
(@vscode/test-electron downloads a VS Code build, which this machine cannot fetch); the packaged
bundle is loaded in plain node with a stand-in `vscode` module to prove it needs nothing else."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "vscode-extension"
GRAMMAR = ROOT / "grammars" / "alpha.tmLanguage.json"


def run(*cmd: str, timeout: float = 180, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        cmd, cwd=EXT, capture_output=True, text=True, timeout=timeout, env=env or dict(os.environ)
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


@pytest.fixture(scope="module")
def compiled() -> Path:
    """node_modules from package-lock.json (npm ci, reused when current), then `npm run compile`."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the VS Code extension")
    run("bash", "scripts/deps.sh", timeout=600)
    run("npm", "run", "compile")
    return EXT


def manifest() -> dict:
    return json.loads((EXT / "package.json").read_text())


def test_manifest_language_grammar_commands_settings() -> None:
    m = manifest()
    c = m["contributes"]
    (lang,) = c["languages"]
    assert lang["id"] == "alphadsl" and lang["extensions"] == [".alpha"]
    assert "Alpha" in lang["aliases"]
    (grammar,) = c["grammars"]
    assert grammar["language"] == "alphadsl"
    assert grammar["scopeName"] == json.loads(GRAMMAR.read_text())["scopeName"] == "source.alphadsl"
    assert grammar["path"] == "./syntaxes/alpha.tmLanguage.json"
    assert "onLanguage:alphadsl" in m["activationEvents"]
    assert m["main"] == "./dist/extension.js"
    commands = {x["command"]: x["title"] for x in c["commands"]}
    assert commands["alpha.showProjection"] == "Show Role Projection"
    for command in ("check", "build", "run", "runPlan", "projectRole", "explainRefusal", "openTui"):
        assert f"alpha.{command}" in commands, command
    # packaging needs no flags: a licence file matching the field, a repository, an icon
    assert m["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text() == (EXT / "LICENSE").read_text()
    assert "MIT License" in (EXT / "LICENSE").read_text()
    assert m["repository"]["type"] == "git" and m["repository"]["url"]
    assert (EXT / m["icon"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert m["scripts"]["package"] == "vsce package"
    (matcher,) = c["problemMatchers"]
    assert matcher["name"] == "alpha" and matcher["owner"] == "alpha"
    (task,) = c["taskDefinitions"]
    assert task["type"] == "alpha" and task["properties"]["command"]["enum"] == [
        "check",
        "build",
        "run",
    ]
    props = c["configuration"]["properties"]
    assert props["alpha.server.command"]["default"] == ["alpha-lsp"]
    assert props["alpha.server.command"]["type"] == "array"
    assert props["alpha.server.pythonPath"]["type"] == "string"
    assert props["alpha.trace.server"]["enum"] == ["off", "messages", "verbose"]
    # the extension's README documents every setting and command
    readme = (EXT / "README.md").read_text()
    for name in [*props, *commands]:
        assert f"`{name}`" in readme, name
    conf = json.loads((EXT / lang["configuration"]).read_text())
    assert conf["comments"] == {"lineComment": "#"}
    assert ["{", "}"] in conf["brackets"] and ["[", "]"] in conf["brackets"]
    assert {p["open"] for p in conf["autoClosingPairs"]} == {"{", "[", "(", '"'}
    # the lock file is committed and matches the manifest; the client is bundled (esbuild), so
    # nothing is a runtime dependency
    lock = json.loads((EXT / "package-lock.json").read_text())
    assert lock["packages"][""]["devDependencies"] == m["devDependencies"]
    assert "dependencies" not in m and "dependencies" not in lock["packages"][""]
    assert m["devDependencies"]["vscode-languageclient"].startswith("11.")
    assert m["devDependencies"]["esbuild"]


def test_compiles_and_unit_tests(compiled: Path) -> None:
    """The editor-free parts, and the bundle activated against the stand-in `vscode`: every
    command registered, check/build/run as tasks of the CLI beside the server (the workspace's
    `.venv-test`) read by `$alpha`, the task provider, "Explain refusal" (the real
    `alpha explain`), alpha-tui in a terminal, the status item."""
    assert (compiled / "out" / "extension.js").stat().st_size > 0
    assert (compiled / "dist" / "extension.js").stat().st_size > 0
    assert (compiled / "syntaxes" / "alpha.tmLanguage.json").read_bytes() == GRAMMAR.read_bytes()
    env = {**os.environ, "ALPHA_VENV_BIN": str(Path(sys.executable).parent)}
    out = run("node", "--test", "test/unit/", env=env)
    assert "# fail 0" in out and "# pass 15" in out, out


def test_problem_matcher_reads_alpha_check(compiled: Path, tmp_path: Path) -> None:
    """The matcher's patterns, as package.json declares them, find every refusal `alpha check`
    prints, at the line and column (1-based) of its span, with its name as the code."""
    source = (ROOT / "examples" / "blobs.alpha").read_text()
    broken = source.replace("learner momentum(", "learner momentum(bogus: 1, ", 1)
    assert broken != source
    broken = re.sub(r"steps \d+", "steps 0", broken, count=1)
    path = tmp_path / "broken.alpha"
    path.write_text(broken)
    alpha = str(Path(sys.executable).parent / "alpha")
    proc = subprocess.run(
        [alpha, "check", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0
    output = tmp_path / "output.txt"
    output.write_text(proc.stdout + proc.stderr)
    matched = json.loads(run("node", "test/match-problems.js", str(output)))
    assert matched["owner"] == "alpha"
    from alpha_core.workspace import Workspace

    analysis = Workspace().analyze(str(path), broken)
    expected = []
    for d in analysis.diagnostics:
        assert d.span is not None
        line = broken.count("\n", 0, d.span.start) + 1
        column = d.span.start - (broken.rfind("\n", 0, d.span.start) + 1) + 1
        expected.append((d.name, d.message, str(path), line, column))
    found = [(p["code"], p["message"], p["file"], p["line"], p["column"]) for p in matched["found"]]
    assert len(expected) >= 2 and sorted(found) == sorted(expected), (found, expected)


def test_grammar(compiled: Path) -> None:
    files = sorted((compiled / "test" / "grammar").glob("*.alpha"))
    assert len(files) >= 3
    asserted = sum(
        1
        for f in files
        for line in f.read_text().splitlines()[1:]
        if line.startswith("#") and ("^" in line or "<-" in line)
    )
    assert asserted >= 150, asserted
    out = run("npm", "run", "test:grammar")
    for f in files:
        assert f"✓ test/grammar/{f.name} run successfuly" in out, out


def test_vsix(compiled: Path, tmp_path: Path) -> None:
    vsix = tmp_path / "alpha.vsix"
    run("npx", "vsce", "package", "--out", str(vsix))  # no other flag: nothing is missing
    assert vsix.stat().st_size < 1_000_000, vsix.stat().st_size
    with zipfile.ZipFile(vsix) as z:
        names = z.namelist()
        lower = {n.lower() for n in names}
        for needed in [
            "extension/package.json",
            "extension/dist/extension.js",
            "extension/license.txt",
            "extension/images/icon.png",
            "extension/syntaxes/alpha.tmLanguage.json",
            "extension/language-configuration.json",
            "extension/readme.md",
        ]:
            assert needed.lower() in lower, needed
        assert z.read("extension/syntaxes/alpha.tmLanguage.json") == GRAMMAR.read_bytes()
        assert json.loads(z.read("extension/package.json"))["name"] == "alpha-lang"
        z.extractall(tmp_path / "unpacked")
    paths = [PurePosixPath(n) for n in names]
    # nothing of the sources, tests, build scripts or maps
    for p in paths:
        if len(p.parts) < 2:
            assert p.name in {"extension.vsixmanifest", "[Content_Types].xml"}, p
            continue
        assert p.parts[1] not in {"src", "test", "scripts", "out", "node_modules"}, p
        assert p.suffix not in {".ts", ".map", ".vsix"}, p
        assert p.name not in {"tsconfig.json", "package-lock.json", ".npmrc", ".gitignore"}, p
    # one bundle: vscode-languageclient and the client's own modules inside
    assert len(names) < 20, names
    # the packaged client loads with only its own files (and a stand-in for `vscode`)
    loaded = json.loads(
        run("node", "test/load-packaged.js", str(tmp_path / "unpacked" / "extension"))
    )
    assert loaded["activate"] == loaded["deactivate"] == "function"
    assert loaded["modules"] == 1  # the bundle alone


def test_the_grammars_highlight_every_built_in_function() -> None:
    """The TextMate grammar (VS Code) and the Vim syntax (Neovim) name every built-in the
    checker knows: activations, layer functions, reductions, learners, losses, initialisers."""
    import re

    from alpha_core.check.builtins import CALLS, REDUCE, UNARY
    from alpha_core.check.system import INITS, LEARNERS, LOSSES

    names = {*UNARY, *CALLS, *REDUCE, *LEARNERS, *LOSSES, *INITS}
    builtin = json.loads(GRAMMAR.read_text())["repository"]["builtin"]["patterns"]
    matched = {
        word
        for pattern in builtin
        for group in re.findall(r"\\\\b\(([a-z_0-9|]+)\)", json.dumps(pattern))
        for word in group.split("|")
    }
    assert names <= matched, sorted(names - matched)
    vim = (ROOT / "editors" / "nvim" / "syntax" / "alphadsl.vim").read_text()
    keywords = {w for line in vim.splitlines() if "alphaBuiltin" in line for w in line.split()}
    assert names <= keywords, sorted(names - keywords)
