"""`python -m alpha_cli` runs the `alpha` command."""

from alpha_cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
