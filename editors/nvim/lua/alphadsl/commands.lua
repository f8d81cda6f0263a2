-- The commands behind the server's code lenses (docs/lsp.md, "Code lens"): `alpha.projectRole`
-- shows a projection; `alpha.run`, `alpha.runPlan` and `alpha.build` run the `alpha` CLI in a
-- terminal split. Registered in vim.lsp.commands, where vim.lsp.codelens.run() finds them.

local C = {}

--- The `alpha` CLI next to the server: `.../bin/alpha-lsp` -> `.../bin/alpha`; a server run as
--- `python -m alpha_lsp` -> `python -m alpha_cli.main`; else `alpha` from PATH.
function C.cli(cfg)
  if cfg.alpha_cmd then
    return type(cfg.alpha_cmd) == 'string' and { cfg.alpha_cmd } or cfg.alpha_cmd
  end
  local cmd = cfg.cmd or {}
  local exe = cmd[1] or ''
  if exe:match('alpha%-lsp$') then
    local sibling = exe:gsub('alpha%-lsp$', 'alpha')
    if vim.fn.executable(sibling) == 1 then
      return { sibling }
    end
  end
  if cmd[2] == '-m' and cmd[3] == 'alpha_lsp' then
    return { exe, '-m', 'alpha_cli.main' }
  end
  return { 'alpha' }
end

--- The command line for a lens's argument `{uri, system | plan, pairing?}`.
function C.command_line(cfg, verb, arg)
  local line = C.cli(cfg)
  table.insert(line, verb)
  table.insert(line, vim.uri_to_fname(arg.uri))
  if arg.plan then
    vim.list_extend(line, { '--plan', arg.plan })
  elseif arg.system then
    vim.list_extend(line, { '--system', arg.system })
  end
  if arg.pairing then
    vim.list_extend(line, { '--pairing', arg.pairing })
  end
  return line
end

C.last_terminal = nil -- the buffer of the last command's terminal (for tests and :b)

local function in_terminal(line)
  vim.cmd('botright split')
  vim.cmd('enew')
  local job = vim.fn.termopen(line)
  C.last_terminal = vim.api.nvim_get_current_buf()
  return job
end

--- The file a lens runs or builds, written first when its buffer has unsaved edits: the CLI
--- reads the file, and running the saved text while the screen shows another would train
--- something other than what the user sees. False (and an error on screen) if it cannot be.
function C.saved(arg)
  if not arg.uri then
    return true
  end
  local buf = vim.uri_to_bufnr(arg.uri)
  if not vim.api.nvim_buf_is_loaded(buf) or not vim.bo[buf].modified then
    return true
  end
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(buf), ':~:.')
  local ok, err = pcall(vim.api.nvim_buf_call, buf, function()
    vim.cmd('silent write')
  end)
  if not ok then
    vim.notify(('Alpha: %s has unsaved edits and could not be written: %s'):format(name, err),
      vim.log.levels.ERROR)
    return false
  end
  vim.notify(('Alpha: wrote %s (it had unsaved edits) before starting alpha'):format(name))
  return true
end

function C.register(M)
  local function arg_of(command)
    return (command.arguments or {})[1] or {}
  end
  vim.lsp.commands['alpha.projectRole'] = function(command, ctx)
    local a = arg_of(command)
    M.projection(a.plan, a.role, a.pairing, ctx and ctx.bufnr or 0)
  end
  vim.lsp.commands['alpha.runPlan'] = function(command)
    if C.saved(arg_of(command)) then
      return in_terminal(C.command_line(M.config, 'run', arg_of(command)))
    end
  end
  vim.lsp.commands['alpha.run'] = vim.lsp.commands['alpha.runPlan']
  vim.lsp.commands['alpha.build'] = function(command)
    if C.saved(arg_of(command)) then
      return in_terminal(C.command_line(M.config, 'build', arg_of(command)))
    end
  end
end

return C
