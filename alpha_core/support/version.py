"""The version every face prints for `--version`: the installed package's, and the Python it
runs on, so a bug report names both."""

from __future__ import annotations

import platform


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("alpha")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0.1.0 (not installed)"


def version_line(prog: str) -> str:
    return f"{prog} {version()} (Python {platform.python_version()}, {platform.machine()})"
