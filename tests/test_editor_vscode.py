"""The VS Code extension (vscode-extension/): it compiles with tsc, its editor-free parts and the
TextMate grammar pass their tests, and `vsce package` makes a .vsix that holds what VS Code loads
(manifest, compiled client, grammar, language configuration, README, the runtime dependency) and
nothing else. VS Code itself cannot run here; the packaged client is loaded in plain node with a
stand-in `vscode` module to prove its requires resolve inside the package."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "vscode-extension"
GRAMMAR = ROOT / "grammars" / "alpha.tmLanguage.json"


def run(*cmd: str, timeout: float = 180) -> str:
    proc = subprocess.run(cmd, cwd=EXT, capture_output=True, text=True, timeout=timeout)
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
    assert m["main"] == "./out/extension.js"
    commands = {x["command"]: x["title"] for x in c["commands"]}
    assert commands["alpha.showProjection"] == "Show Role Projection"
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
    # the lock file is committed and matches the manifest's dependencies
    lock = json.loads((EXT / "package-lock.json").read_text())
    assert lock["packages"][""]["dependencies"] == m["dependencies"]
    assert m["dependencies"]["vscode-languageclient"].startswith("11.")


def test_compiles_and_unit_tests(compiled: Path) -> None:
    assert (compiled / "out" / "extension.js").stat().st_size > 0
    assert (compiled / "syntaxes" / "alpha.tmLanguage.json").read_bytes() == GRAMMAR.read_bytes()
    out = run("node", "--test", "test/unit/")
    assert "# fail 0" in out and "# pass 3" in out, out


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


def runtime_packages() -> set[str]:
    """The packages vscode-languageclient needs at run time, from package-lock.json."""
    lock = json.loads((EXT / "package-lock.json").read_text())
    return {
        key.removeprefix("node_modules/")
        for key, pkg in lock["packages"].items()
        if key.startswith("node_modules/") and not pkg.get("dev")
    }


def test_vsix(compiled: Path, tmp_path: Path) -> None:
    vsix = tmp_path / "alpha.vsix"
    run("npm", "run", "package", "--", "--out", str(vsix))
    assert vsix.stat().st_size < 1_000_000, vsix.stat().st_size
    with zipfile.ZipFile(vsix) as z:
        names = z.namelist()
        lower = {n.lower() for n in names}
        for needed in [
            "extension/package.json",
            "extension/out/extension.js",
            "extension/out/common.js",
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
        assert p.parts[1] not in {"src", "test", "scripts"}, p
        assert p.suffix not in {".ts", ".map", ".vsix"}, p
        assert p.name not in {"tsconfig.json", "package-lock.json", ".npmrc", ".gitignore"}, p
    # node_modules: exactly the runtime dependency and its own dependencies
    shipped = {
        p.parts[2] if not p.parts[2].startswith("@") else "/".join(p.parts[2:4])
        for p in paths
        if len(p.parts) > 3 and p.parts[1] == "node_modules"
    }
    assert shipped == runtime_packages(), shipped ^ runtime_packages()
    assert "vscode-languageclient" in shipped
    assert not shipped & {"typescript", "@vscode/vsce", "vscode-tmgrammar-test", "@types/vscode"}
    assert len(names) < 300, len(names)
    # the packaged client loads with only its own files (and a stand-in for `vscode`)
    loaded = json.loads(
        run("node", "test/load-packaged.js", str(tmp_path / "unpacked" / "extension"))
    )
    assert loaded["activate"] == loaded["deactivate"] == "function"
    assert loaded["modules"] > 10
