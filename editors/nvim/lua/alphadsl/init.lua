-- Alpha for Neovim: the `alphadsl` filetype, the language server alpha-lsp, and
-- :AlphaProjection {plan} {role} [pairing] (the server's custom request `alpha/projection`).
--
-- Neovim 0.11+: vim.lsp.config('alpha', ...) + vim.lsp.enable('alpha').
-- Neovim 0.7 - 0.10: vim.lsp.start_client + vim.lsp.buf_attach_client from a FileType autocmd.
--
-- require('alphadsl').setup({
--   cmd = { '/path/to/.venv/bin/alpha-lsp' },  -- default: $ALPHA_LSP, alpha-lsp on PATH, or
--                                              -- the .venv(-*) of the working folder or above
--   root_markers = { 'pyproject.toml', '.git' },
--   init_options = { debounceMs = 50 },
--   on_attach = function(client, bufnr) end,
--   inlay_hints = true,  -- the shape of every `let`
--   codelens = true,     -- Run / Project / Build above declarations (vim.lsp.codelens.run())
--   alpha_cmd = nil,     -- the `alpha` CLI for the Run and Build lenses (default: beside cmd)
-- })
--
-- :checkhealth alphadsl says whether the server can start and is attached.

local M = {}

M.did_setup = false
M.name = 'alpha'
M.filetype = 'alphadsl'

local defaults = {
  cmd = nil, -- computed in setup: { $ALPHA_LSP } or { 'alpha-lsp' }
  root_markers = { 'pyproject.toml', '.git' },
  init_options = {},
  settings = {},
  on_attach = nil,
  capabilities = nil,
  inlay_hints = true,
  codelens = true,
  alpha_cmd = nil,
}

M.config = vim.deepcopy(defaults)

local has_config_api = vim.lsp.config ~= nil and vim.lsp.enable ~= nil
local method_calls = vim.fn.has('nvim-0.11') == 1 -- client:request() instead of client.request()

local function notify(msg, level)
  vim.notify('Alpha: ' .. msg, level or vim.log.levels.INFO)
end

--- The server's command line from the options, $ALPHA_LSP or the default.
local function server_cmd(opts)
  if opts.cmd ~= nil then
    if type(opts.cmd) == 'string' then
      return { opts.cmd }
    end
    return opts.cmd
  end
  local env = vim.env.ALPHA_LSP
  if env ~= nil and env ~= '' then
    return { env }
  end
  if vim.fn.executable('alpha-lsp') == 1 then
    return { 'alpha-lsp' }
  end
  -- a quick start's virtual environment: .venv, else a .venv-* (the README makes .venv-test),
  -- in the working folder or a folder above it
  local dir = vim.fn.getcwd()
  while dir and dir ~= '' do
    local found = { dir .. '/.venv/bin/alpha-lsp' }
    vim.list_extend(found, vim.fn.sort(vim.fn.glob(dir .. '/.venv-*/bin/alpha-lsp', false, true)))
    for _, exe in ipairs(found) do
      if vim.fn.executable(exe) == 1 then
        return { exe }
      end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then
      break
    end
    dir = parent
  end
  return { 'alpha-lsp' }
end

--- Calls a method of an LSP client object in the form this Neovim expects.
local function call(client, method, ...)
  if method_calls then
    return client[method](client, ...)
  end
  return client[method](...)
end

--- The first folder at or above `path` that holds one of `markers`; else the file's folder.
local function find_root(path, markers)
  local dir = vim.fn.fnamemodify(path, ':p:h')
  local cur = dir
  while cur and cur ~= '' do
    for _, marker in ipairs(markers) do
      if vim.loop.fs_stat(cur .. '/' .. marker) then
        return cur
      end
    end
    local parent = vim.fn.fnamemodify(cur, ':h')
    if parent == cur then
      break
    end
    cur = parent
  end
  return dir
end

--- The alpha-lsp client attached to `bufnr`, if any.
function M.client(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local clients
  if vim.lsp.get_clients then
    clients = vim.lsp.get_clients({ bufnr = bufnr, name = M.name })
  else
    clients = {}
    for _, c in pairs(vim.lsp.buf_get_clients(bufnr)) do
      if c.name == M.name then
        table.insert(clients, c)
      end
    end
  end
  return clients[1]
end

--- Whether the server command cannot be started: then say so on screen, once (Neovim itself
--- only writes it into lsp.log).
local warned_missing = false
local function server_missing()
  local exe = M.config.cmd[1]
  if exe ~= nil and vim.fn.executable(exe) == 1 then
    return false
  end
  if not warned_missing then
    warned_missing = true
    notify(
      ('cannot start the language server: `%s` is not an executable. Pass cmd = { '
        .. "'/path/to/.venv/bin/alpha-lsp' } to require('alphadsl').setup(), or set "
        .. '$ALPHA_LSP (:checkhealth alphadsl)'):format(tostring(exe)),
      vim.log.levels.ERROR
    )
  end
  return true
end

--- A server that stops with an error (a Python without the `alpha` package, say): said on
--- screen, not only in lsp.log.
local function on_exit(code, signal)
  if code ~= 0 and code ~= nil then
    vim.schedule(function()
      notify(
        ('the language server `%s` exited with code %d%s (:checkhealth alphadsl, %s)'):format(
          table.concat(M.config.cmd, ' '),
          code,
          (signal and signal ~= 0) and (' (signal ' .. signal .. ')') or '',
          vim.lsp.get_log_path()
        ),
        vim.log.levels.ERROR
      )
    end)
  end
end

--- What every attached buffer gets: completion on <C-x><C-o>, inlay hints, code lenses, then
--- the user's on_attach.
local function on_attach(client, bufnr)
  -- Neovim 0.10+ sets the LSP omnifunc itself when a buffer's is empty; 0.7 never does, so
  -- completion did nothing out of the box there. A user's own omnifunc is kept.
  if vim.bo[bufnr].omnifunc == '' then
    vim.bo[bufnr].omnifunc = 'v:lua.vim.lsp.omnifunc'
  end
  if M.config.inlay_hints then
    require('alphadsl.inlay').enable(client, bufnr, call)
  end
  if M.config.codelens and vim.lsp.codelens then
    local function refresh()
      if not pcall(vim.lsp.codelens.refresh, { bufnr = bufnr }) then
        pcall(vim.lsp.codelens.refresh)
      end
    end
    refresh()
    vim.api.nvim_create_autocmd({ 'BufEnter', 'InsertLeave', 'BufWritePost' }, {
      group = vim.api.nvim_create_augroup('alphadsl_codelens_' .. bufnr, { clear = true }),
      buffer = bufnr,
      callback = refresh,
    })
  end
  if M.config.on_attach then
    M.config.on_attach(client, bufnr)
  end
end

-- Neovim 0.7 - 0.10: one client per root folder, attached to every alphadsl buffer under it.
local clients_by_root = {}

local function attach_legacy(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = find_root(path ~= '' and path or vim.fn.getcwd() .. '/x', M.config.root_markers)
  local id = clients_by_root[root]
  local existing = id and vim.lsp.get_client_by_id(id)
  if not existing or existing.is_stopped() then
    if server_missing() then
      return
    end
    id = vim.lsp.start_client({
      name = M.name,
      cmd = M.config.cmd,
      root_dir = root,
      init_options = M.config.init_options,
      settings = M.config.settings,
      capabilities = M.config.capabilities,
      on_attach = on_attach,
      on_exit = on_exit,
    })
    if not id then
      notify('could not start ' .. table.concat(M.config.cmd, ' '), vim.log.levels.ERROR)
      return
    end
    clients_by_root[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

--- Sets up the filetype, the language server and the commands. May be called again to change
--- the options.
function M.setup(opts)
  opts = opts or {}
  M.config = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts)
  M.config.cmd = server_cmd(opts)
  M.did_setup = true

  if vim.filetype and vim.filetype.add then
    vim.filetype.add({ extension = { alpha = M.filetype } })
  end

  if has_config_api then
    vim.lsp.config(M.name, {
      cmd = M.config.cmd,
      filetypes = { M.filetype },
      root_markers = M.config.root_markers,
      init_options = M.config.init_options,
      settings = M.config.settings,
      capabilities = M.config.capabilities,
      on_attach = on_attach,
      on_exit = on_exit,
    })
    vim.lsp.enable(M.name)
    vim.api.nvim_create_autocmd('FileType', {
      group = vim.api.nvim_create_augroup('alphadsl_server_check', { clear = true }),
      pattern = M.filetype,
      callback = function()
        server_missing()
      end,
    })
  else
    local group = vim.api.nvim_create_augroup('alphadsl_lsp', { clear = true })
    vim.api.nvim_create_autocmd('FileType', {
      group = group,
      pattern = M.filetype,
      callback = function(args)
        attach_legacy(args.buf)
      end,
    })
    -- buffers that already have the filetype (setup called late)
    for _, buf in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].filetype == M.filetype then
        attach_legacy(buf)
      end
    end
  end

  require('alphadsl.commands').register(M)

  vim.api.nvim_create_user_command('AlphaProjection', function(cmd)
    local args = cmd.fargs
    if #args < 2 or #args > 3 then
      notify('usage: :AlphaProjection {plan} {role} [pairing]', vim.log.levels.ERROR)
      return
    end
    M.projection(args[1], args[2], args[3])
  end, {
    nargs = '+',
    complete = function(arglead, cmdline, _)
      return M.complete(arglead, cmdline)
    end,
    desc = 'Show what one role of an Alpha plan runs every round',
  })
end

--- The document symbols of `bufnr` (synchronously, for command-line completion).
local function symbols(bufnr)
  local client = M.client(bufnr)
  if not client then
    return {}
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local answer = call(client, 'request_sync', 'textDocument/documentSymbol', params, 1000, bufnr)
  return (answer and answer.result) or {}
end

--- Completion of :AlphaProjection's arguments: plans, then their roles, then their pairings.
function M.complete(arglead, cmdline)
  local bufnr = M.source(0)
  local words = vim.split(cmdline, '%s+', { trimempty = true })
  local index = #words - 1 -- which argument is being typed (1: plan)
  if arglead == '' then
    index = index + 1
  end
  local syms = symbols(bufnr)
  local out = {}
  local kinds = { plan = 3, pairing = 4, roles = 10, role = 22 }
  if index == 1 then
    for _, s in ipairs(syms) do
      if s.kind == kinds.plan then
        table.insert(out, s.name)
      end
    end
  else
    local plan = words[2]
    for _, s in ipairs(syms) do
      if index == 2 and s.kind == kinds.plan and s.name == plan then
        for _, item in ipairs(s.children or {}) do
          if item.kind == kinds.roles then
            for _, role in ipairs(item.children or {}) do
              local n = tonumber(((role.detail or ''):match('^%[(%d+)%]$')))
              if n == nil then
                table.insert(out, role.name)
              else
                for i = 0, math.min(n, 64) - 1 do
                  table.insert(out, ('%s[%d]'):format(role.name, i))
                end
              end
            end
          end
        end
      elseif index == 3 and s.kind == kinds.pairing and s.detail == 'for ' .. plan then
        table.insert(out, s.name)
      end
    end
  end
  return vim.tbl_filter(function(c)
    return c:sub(1, #arglead) == arglead
  end, out)
end

--- The Alpha source a command works on: `bufnr` (default: the current buffer), or, when that
--- is a projection buffer, the source it was projected from (so :AlphaProjection works again
--- from the projection's own window).
function M.source(bufnr)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  local ok, src = pcall(vim.api.nvim_buf_get_var, bufnr, 'alpha_projection_source')
  if ok and type(src) == 'number' and vim.api.nvim_buf_is_valid(src) then
    return src
  end
  return bufnr
end

M.projection_lines = require('alphadsl.projection').lines

--- Asks alpha-lsp for one role's projection (`alpha/projection`) of a plan of `bufnr` (default:
--- the current buffer, or the source of the projection shown in it) and shows it in a scratch
--- buffer `alpha-projection://PLAN/ROLE`, in the projection window if one is open (else a new
--- vertical split). `done(err, buf)` is called afterwards when given.
function M.projection(plan, role, pairing, bufnr, done)
  bufnr = M.source(bufnr)
  local client = M.client(bufnr)
  if not client then
    notify('alpha-lsp is not attached to this buffer', vim.log.levels.ERROR)
    if done then
      done('not attached')
    end
    return
  end
  local params = { uri = vim.uri_from_bufnr(bufnr), plan = plan, role = role, pairing = pairing }
  call(client, 'request', 'alpha/projection', params, function(err, result)
    local function finish()
      if err then
        notify(err.message or tostring(err), vim.log.levels.ERROR)
        if done then
          done(err.message or tostring(err))
        end
        return
      end
      local buf = require('alphadsl.projection').show(params, result, bufnr)
      if done then
        done(nil, buf)
      end
    end
    if vim.in_fast_event() then
      vim.schedule(finish)
    else
      finish()
    end
  end, bufnr)
end

return M
