-- Buffer settings for Alpha sources.
if vim.b.did_ftplugin then
  return
end
vim.b.did_ftplugin = 1
vim.bo.commentstring = '# %s'
vim.bo.comments = ':#'
vim.bo.expandtab = true
vim.bo.shiftwidth = 2
vim.bo.softtabstop = 2
vim.b.undo_ftplugin = 'setlocal commentstring< comments< expandtab< shiftwidth< softtabstop<'
