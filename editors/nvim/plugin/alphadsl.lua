-- Loaded once at start-up from the runtimepath. Registers the filetype and, unless the user
-- already called require('alphadsl').setup{...} (or set vim.g.alphadsl_no_setup), sets up the
-- language server with the defaults.
if vim.g.loaded_alphadsl then
  return
end
vim.g.loaded_alphadsl = 1

if vim.filetype and vim.filetype.add then
  vim.filetype.add({ extension = { alpha = 'alphadsl' } })
end

local alphadsl = require('alphadsl')
if not alphadsl.did_setup and not vim.g.alphadsl_no_setup then
  alphadsl.setup()
end
