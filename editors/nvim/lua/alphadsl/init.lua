-- Alpha for Neovim: the `alphadsl` filetype, the language server alpha-lsp, and
-- :AlphaProjection {plan} {role} [pairing] (the server's custom request `alpha/projection`).
--
-- Neovim 0.11+: vim.lsp.config('alpha', ...) + vim.lsp.enable('alpha').
-- Neovim 0.7 - 0.10: vim.lsp.start_client + vim.lsp.buf_attach_client from a FileType autocmd.
--
-- require('alphadsl').setup({
--   cmd = { '/path/to/.venv/bin/alpha-lsp' },  -- default: $ALPHA_LSP, else { 'alpha-lsp' }
--   root_markers = { 'pyproject.toml', '.git' },
--   init_options = { debounceMs = 50 },
--   on_attach = function(client, bufnr) end,
-- })

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

-- Neovim 0.7 - 0.10: one client per root folder, attached to every alphadsl buffer under it.
local clients_by_root = {}

local function attach_legacy(bufnr)
  local path = vim.api.nvim_buf_get_name(bufnr)
  local root = find_root(path ~= '' and path or vim.fn.getcwd() .. '/x', M.config.root_markers)
  local id = clients_by_root[root]
  local existing = id and vim.lsp.get_client_by_id(id)
  if not existing or existing.is_stopped() then
    id = vim.lsp.start_client({
      name = M.name,
      cmd = M.config.cmd,
      root_dir = root,
      init_options = M.config.init_options,
      settings = M.config.settings,
      capabilities = M.config.capabilities,
      on_attach = M.config.on_attach,
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
      on_attach = M.config.on_attach,
    })
    vim.lsp.enable(M.name)
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
  local bufnr = vim.api.nvim_get_current_buf()
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

--- The scratch buffer that shows a projection (reused for the same plan and role).
local function scratch(name)
  local buf = -1
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_get_name(b) == name then -- exact: bufnr() would read `[1]` as a pattern
      buf = b
    end
  end
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true)
    vim.api.nvim_buf_set_name(buf, name)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
    vim.bo[buf].filetype = 'alphaprojection'
  end
  return buf
end

--- The lines a projection shows: the role's schedule, then its memory admission.
function M.projection_lines(result)
  local text = (result.text or ''):gsub('%s+$', '')
  local lines = vim.split(text, '\n', { plain = true })
  local admission = result.admission
  if type(admission) == 'table' and type(admission.text) == 'string' then
    table.insert(lines, '')
    table.insert(lines, 'memory admission:')
    for _, l in ipairs(vim.split(admission.text:gsub('%s+$', ''), '\n', { plain = true })) do
      table.insert(lines, l)
    end
  end
  return lines
end

local function show(params, result)
  local name = ('alpha-projection://%s/%s%s'):format(
    params.plan,
    params.role,
    params.pairing and ('@' .. params.pairing) or ''
  )
  local buf = scratch(name)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, M.projection_lines(result))
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if vim.fn.bufwinid(buf) == -1 then
    vim.cmd('vertical sbuffer ' .. buf)
  end
  return buf
end

--- Asks alpha-lsp for one role's projection (`alpha/projection`) of a plan of `bufnr` (default:
--- the current buffer) and shows it in a scratch buffer `alpha-projection://PLAN/ROLE`.
--- `done(err, buf)` is called afterwards when given.
function M.projection(plan, role, pairing, bufnr, done)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
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
      local buf = show(params, result)
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
