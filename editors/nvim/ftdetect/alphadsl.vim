" Alpha sources (*.alpha). The filetype is `alphadsl`: `alpha` belongs to the alpha-nvim dashboard.
autocmd BufRead,BufNewFile *.alpha setfiletype alphadsl
