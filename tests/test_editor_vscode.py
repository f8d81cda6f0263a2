"""The VS Code extension (vscode-extension/): it compiles with tsc and bundles with esbuild, its
editor-free parts, its commands, tasks and status item (the bundle activated against a stand-in
`vscode` module, test/vscode-stand-in.js) and the TextMate grammar pass their tests, the `$alpha`
problem matcher reads what `alpha check` really prints, and a plain `vsce package` (no flags)
makes a .vsix that holds what VS Code loads (manifest, the bundle, grammar, language
configuration, snippets, README, LICENSE, icon) and nothing else; the snippets expand to
source that checks clean, the keybindings are scoped to Alpha editors, and the folder builds
outside the repository. The packaged bundle is loaded in plain node with a stand-in `vscode`
module to prove it needs nothing else; the real VS Code (code-server) runs the .vsix in
tests/test_editor_code_server.py (@vscode/test-electron would download a VS Code build, which
this machine cannot fetch)."""

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
        "project",
    ]
    assert task["properties"]["role"]["type"] == "string"
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
    from alpha_core.workspace.analysis import Workspace

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
            "extension/snippets/alpha.json",
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


def expand_snippet(body: list[str]) -> str:
    """A snippet body as VS Code inserts it when every placeholder keeps its default: `${1:x}`
    is `x` (and a later `$1` mirrors it), `${2|a,b|}` the first choice, `$0` nothing; a tab is
    the indentation of an Alpha file (2 spaces, the language's configurationDefaults)."""
    text = "\n".join(body)
    values: dict[str, str] = {}
    for number, default in re.findall(r"\$\{(\d+):([^{}$]*)\}", text):
        values.setdefault(number, default)
    for number, choices in re.findall(r"\$\{(\d+)\|([^|]*)\|\}", text):
        values.setdefault(number, choices.split(",")[0])
    text = re.sub(r"\$\{(\d+):[^{}$]*\}", lambda m: values[m.group(1)], text)
    text = re.sub(r"\$\{(\d+)\|[^|]*\|\}", lambda m: values[m.group(1)], text)
    text = re.sub(r"\$(\d+)", lambda m: values.get(m.group(1), ""), text)
    assert "$" not in text, text
    return text.replace("\t", "  ")


def test_snippets_keybindings_and_defaults_are_contributed() -> None:
    """Snippets of a whole system, a plan and a pairing; keybindings for check, run and the
    projection, only in an Alpha editor; 2-space indentation for Alpha files."""
    c = manifest()["contributes"]
    lang = c["languages"][0]["id"]
    (snippets,) = c["snippets"]
    assert snippets["language"] == lang == "alphadsl"
    table = json.loads((EXT / snippets["path"]).read_text())
    prefixes = {name: s["prefix"] for name, s in table.items()}
    for decl in ("system", "plan", "pairing"):
        assert decl in prefixes[decl], prefixes
        assert table[decl]["description"]
    keys = {k["command"]: k for k in c["keybindings"]}
    assert set(keys) == {"alpha.check", "alpha.run", "alpha.showProjection"}
    commands = {x["command"] for x in c["commands"]}
    for command, binding in keys.items():
        assert command in commands
        assert binding["key"].startswith("ctrl+alt+") and binding["mac"].startswith("cmd+alt+")
        assert f"editorLangId == {lang}" in binding["when"], binding
    assert len({k["key"] for k in keys.values()}) == len(keys)
    assert c["configurationDefaults"][f"[{lang}]"] == {
        "editor.tabSize": 2,
        "editor.insertSpaces": True,
    }
    readme = (EXT / "README.md").read_text()
    for binding in keys.values():
        assert f"`{binding['key']}`" in readme, binding


def test_snippets_expanded_with_their_defaults_check_clean(tmp_path: Path) -> None:
    """The system, plan and pairing snippets, expanded with their defaults one after another,
    make a file that `alpha check` accepts (and every choice of a choice placeholder too)."""
    table = json.loads((EXT / "snippets" / "alpha.json").read_text())
    text = "\n".join(expand_snippet(table[d]["body"]) for d in ("system", "plan", "pairing"))
    alpha = str(Path(sys.executable).parent / "alpha")

    def check(source: str) -> str:
        path = tmp_path / "snippets.alpha"
        path.write_text(source)
        proc = subprocess.run(
            [alpha, "check", str(path)], capture_output=True, text=True, timeout=60
        )
        assert proc.returncode == 0, source + proc.stdout + proc.stderr
        return proc.stdout

    out = check(text)
    assert "ok system blobs" in out and "ok plan pair for blobs" in out, out
    assert "ok pairing local for pair" in out, out
    # each other choice of a choice placeholder checks clean too
    for name, snippet in table.items():
        body = "\n".join(snippet["body"])
        for number, choices in re.findall(r"\$\{(\d+)\|([^|]*)\|\}", body):
            for choice in choices.split(",")[1:]:
                chosen = body.replace(f"${{{number}|{choices}|}}", choice)
                parts = [
                    expand_snippet(chosen.split("\n"))
                    if d == name
                    else expand_snippet(table[d]["body"])
                    for d in ("system", "plan", "pairing")
                ]
                check("\n".join(parts))


def test_the_folder_builds_outside_the_repository(compiled: Path, tmp_path: Path) -> None:
    """vscode-extension/ copied out of the repository: copy-grammar takes $ALPHA_GRAMMAR, keeps
    a grammar already in syntaxes/, and without either stops with one message saying what to do
    (it used to fail on the missing ../grammars)."""
    alone = tmp_path / "alpha-vscode"
    shutil.copytree(
        EXT,
        alone,
        ignore=shutil.ignore_patterns("node_modules", ".code-server", "syntaxes", "out", "dist"),
    )
    (alone / "node_modules").symlink_to(EXT / "node_modules")
    node = shutil.which("node")
    assert node is not None
    env = {k: v for k, v in os.environ.items() if k != "ALPHA_GRAMMAR"}
    proc = subprocess.run(
        [node, "scripts/copy-grammar.js"], cwd=alone, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 1 and "ALPHA_GRAMMAR" in proc.stderr, proc.stderr
    out = subprocess.run(
        ["npm", "run", "compile"],
        cwd=alone,
        capture_output=True,
        text=True,
        timeout=300,
        env={**env, "ALPHA_GRAMMAR": str(GRAMMAR)},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert (alone / "syntaxes" / "alpha.tmLanguage.json").read_bytes() == GRAMMAR.read_bytes()
    assert (alone / "dist" / "extension.js").stat().st_size > 0
    kept = subprocess.run(
        [node, "scripts/copy-grammar.js"], cwd=alone, capture_output=True, text=True, env=env
    )
    assert kept.returncode == 0 and "keeping syntaxes/alpha.tmLanguage.json" in kept.stderr


def test_install_scripts_are_approved_for_npm_11() -> None:
    """npm 11 warns about dependencies' install scripts not in `allowScripts` (and skips them
    under strict-allow-scripts): esbuild's, which puts its binary in place, is approved, and so
    is @vscode/vsce-sign's; deps.sh checks that esbuild runs after the install."""
    m = manifest()
    assert m["allowScripts"] == {"esbuild": True, "@vscode/vsce-sign": True}
    lock = json.loads((EXT / "package-lock.json").read_text())
    with_scripts = {
        path.removeprefix("node_modules/")
        for path, entry in lock["packages"].items()
        if entry.get("hasInstallScript")
    }
    assert with_scripts == set(m["allowScripts"]), with_scripts
    assert "esbuild --version" in (EXT / "scripts" / "deps.sh").read_text()
