"""alpha-tui's entry point: read the command line, refuse an unreadable source by name, start
the app."""

from __future__ import annotations

import sys

from alpha_core.support.source_file import SourceRefusal, read_source
from alpha_tui.app import AlphaTui
from alpha_tui.options import Options, parse


def main(argv: list[str] | None = None) -> int:
    o: Options = parse(argv)
    unreadable = read_source(o.file)
    if isinstance(unreadable, SourceRefusal):
        print(f"error[{unreadable.name}]: {unreadable.message}", file=sys.stderr)
        return 1
    app = AlphaTui(
        o.file,
        o.plan,
        o.pairing,
        o.checkpoint_every,
        o.checkpoint_dir,
        o.port_base,
        o.steps,
        o.hosts,
        o.gpu_shadow,
    )
    app.run()
    for folder in app.kept:  # what it trained stays: say where, once the screen is closed
        print(f"alpha-tui: run kept in {folder}", file=sys.stderr)
    if app.interrupted is not None:
        sig, line = app.interrupted
        if line:
            print(line, file=sys.stderr)
        return 128 + sig
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
