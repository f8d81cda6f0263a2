-- Inlay hints (the shape of every `let`): Neovim 0.10+ shows the server's hints itself
-- (vim.lsp.inlay_hint.enable); before that they are drawn here as virtual text at the end of
-- the line, refreshed when the buffer changes.

local I = {}

I.ns = vim.api.nvim_create_namespace('alphadsl_inlay')

local function draw(bufnr, hints)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, I.ns, 0, -1)
  local by_line = {}
  for _, h in ipairs(hints or {}) do
    local label = type(h.label) == 'string' and h.label or ''
    local line = h.position.line
    by_line[line] = by_line[line] or {}
    table.insert(by_line[line], (h.tooltip or label))
  end
  for line, labels in pairs(by_line) do
    if line < vim.api.nvim_buf_line_count(bufnr) then
      vim.api.nvim_buf_set_extmark(bufnr, I.ns, line, 0, {
        virt_text = { { '  ' .. table.concat(labels, ', '), 'Comment' } },
        virt_text_pos = 'eol',
      })
    end
  end
end

--- Ask the server for the buffer's hints and draw them (0.7 - 0.9).
function I.refresh(client, bufnr, call)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    range = {
      start = { line = 0, character = 0 },
      ['end'] = { line = vim.api.nvim_buf_line_count(bufnr), character = 0 },
    },
  }
  call(client, 'request', 'textDocument/inlayHint', params, function(err, result)
    if err == nil then
      vim.schedule(function()
        draw(bufnr, result)
      end)
    end
  end, bufnr)
end

--- Turn hints on for a buffer: the built-in display where there is one, else this one.
function I.enable(client, bufnr, call)
  if vim.lsp.inlay_hint and vim.lsp.inlay_hint.enable then
    if not pcall(vim.lsp.inlay_hint.enable, true, { bufnr = bufnr }) then
      pcall(vim.lsp.inlay_hint.enable, bufnr, true) -- the 0.10.0 signature
    end
    return
  end
  I.refresh(client, bufnr, call)
  vim.api.nvim_create_autocmd({ 'InsertLeave', 'TextChanged', 'BufEnter' }, {
    group = vim.api.nvim_create_augroup('alphadsl_inlay_' .. bufnr, { clear = true }),
    buffer = bufnr,
    callback = function()
      I.refresh(client, bufnr, call)
    end,
  })
end

return I
