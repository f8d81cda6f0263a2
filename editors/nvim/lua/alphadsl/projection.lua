-- The projection view: one scratch buffer per plan and role, all shown in one window that is
-- reused (a second :AlphaProjection replaces the view instead of opening another split).

local P = {}

P.win = nil -- the window showing projections, while it is open

--- The scratch buffer named `name` (reused for the same plan and role).
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
function P.lines(result)
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

local function is_projection(buf)
  return vim.api.nvim_buf_get_name(buf):find('alpha-projection://', 1, true) ~= nil
end

--- Shows `result` for `params`, projected from the source buffer `source`; returns the buffer.
function P.show(params, result, source)
  local name = ('alpha-projection://%s/%s%s'):format(
    params.plan,
    params.role,
    params.pairing and ('@' .. params.pairing) or ''
  )
  local buf = scratch(name)
  vim.api.nvim_buf_set_var(buf, 'alpha_projection_source', source)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, P.lines(result))
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  local shown = vim.fn.bufwinid(buf)
  if shown ~= -1 then
    P.win = shown
  elseif P.win and vim.api.nvim_win_is_valid(P.win) then
    vim.api.nvim_win_set_buf(P.win, buf)
  elseif is_projection(vim.api.nvim_get_current_buf()) then
    P.win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(P.win, buf)
  else
    vim.cmd('vertical sbuffer ' .. buf)
    P.win = vim.api.nvim_get_current_win()
  end
  return buf
end

return P
