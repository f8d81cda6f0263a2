-- :checkhealth alphadsl — is the plugin set up, can the server start, is it attached here.

local H = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return h.start, h.ok, h.warn, h.error, h.info
  end
  local old = require('health') -- Neovim 0.7 - 0.9
  return old.report_start, old.report_ok, old.report_warn, old.report_error, old.report_info
end

function H.check()
  local start, ok, warn, error, info = reporter()
  local M = require('alphadsl')
  local v = vim.version()
  start('alphadsl: Neovim')
  local api = (vim.lsp.config and vim.lsp.enable) and 'vim.lsp.config + vim.lsp.enable'
    or 'vim.lsp.start_client + buf_attach_client'
  ok(('Neovim %d.%d.%d, the language client through %s'):format(v.major, v.minor, v.patch, api))
  if M.did_setup then
    ok("require('alphadsl').setup() has run")
  else
    warn("require('alphadsl').setup() has not run", { 'call it, or unset vim.g.alphadsl_no_setup' })
  end

  start('alphadsl: the language server')
  local cmd = M.config.cmd or {}
  local exe = cmd[1]
  local starts = false
  if exe == nil or vim.fn.executable(exe) ~= 1 then
    error(('the server command `%s` is not an executable'):format(table.concat(cmd, ' ')), {
      "pass cmd = { '/path/to/.venv/bin/alpha-lsp' } to require('alphadsl').setup()",
      'or set $ALPHA_LSP, or put alpha-lsp on PATH (pip install -e . in the repository)',
    })
  else
    local out = vim.fn.system(vim.list_extend(vim.deepcopy(cmd), { '--help' }))
    if vim.v.shell_error == 0 and out:find('alpha%-lsp') then
      starts = true
      ok(('`%s` starts (%s)'):format(table.concat(cmd, ' '), vim.fn.exepath(exe)))
    else
      error(('`%s --help` failed: %s'):format(table.concat(cmd, ' '), vim.trim(out)))
    end
  end
  local cli = require('alphadsl.commands').cli(M.config)
  if vim.fn.executable(cli[1]) == 1 then
    ok(('the CLI for Run and Build lenses: `%s`'):format(table.concat(cli, ' ')))
  else
    warn(('the CLI `%s` is not an executable: Run and Build lenses will fail'):format(cli[1]))
  end

  -- :checkhealth opens its own buffer: report on every loaded Alpha source instead
  start('alphadsl: Alpha buffers')
  local any = false
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == M.filetype then
      any = true
      local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':~:.')
      -- `nvim file.alpha -c 'checkhealth alphadsl'` asks while the server is still starting:
      -- give it the time a start takes before saying it is not there
      local client = M.client(buf)
      if not client and starts then
        vim.wait(10000, function()
          return M.client(buf) ~= nil
        end, 50)
        client = M.client(buf)
      end
      if client then
        ok(('%s: alpha-lsp is attached (client id %d)'):format(name, client.id))
      else
        error(('%s: alpha-lsp is not attached'):format(name), {
          'see the log: ' .. vim.lsp.get_log_path(),
        })
      end
    end
  end
  if not any then
    info('no Alpha source is open (filetype `' .. M.filetype .. '`)')
  end
end

return H
