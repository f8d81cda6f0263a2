"""`python -m alpha_lsp`: the language server over stdio (or `--tcp HOST:PORT`)."""

from alpha_lsp.server import main

if __name__ == "__main__":
    main()
