"""Code lenses above declarations, as rust-analyzer's "▶ Run": on a checked system "▶ Run" and
"Build", on a checked plan "▶ Run plan", "Project role" and "Build", on a checked pairing
"▶ Run plan" and "Build" with it. Each is a command the editor implements (VS Code:
vscode-extension/src/commands.ts; Neovim: editors/nvim/lua/alphadsl/commands.lua), with one
argument `{uri, system | plan, pairing?, role?}`."""

from __future__ import annotations

from lsprotocol import types

from alpha_core.support.span import Span
from alpha_lsp.kernel import AlphaServer, Snapshot, guarded

RUN = "alpha.run"
RUN_PLAN = "alpha.runPlan"
PROJECT = "alpha.projectRole"
BUILD = "alpha.build"
COMMANDS = (RUN, RUN_PLAN, PROJECT, BUILD)


def _lens(
    snap: Snapshot, span: Span, title: str, command: str, arg: dict[str, str]
) -> types.CodeLens:
    return types.CodeLens(
        range=snap.lines.range(span),
        command=types.Command(title=title, command=command, arguments=[arg]),
    )


def lenses(snap: Snapshot) -> list[types.CodeLens]:
    checked = snap.analysis.checked
    out: list[types.CodeLens] = []
    for decl in snap.analysis.module.decls:
        if decl.kind == "error":
            continue
        head = Span(decl.span.start, decl.name_span.end)  # `plan pair`: where the lens stands
        if decl.kind == "system" and decl.name in checked.programs:
            arg = {"uri": snap.uri, "system": decl.name}
            out += [_lens(snap, head, "▶ Run", RUN, arg), _lens(snap, head, "Build", BUILD, arg)]
        elif decl.kind == "plan" and decl.name in checked.plans:
            plan = checked.plans[decl.name]
            arg = {"uri": snap.uri, "plan": decl.name}
            role = plan.membership.name_of(0)
            out += [
                _lens(snap, head, "▶ Run plan", RUN_PLAN, arg),
                _lens(snap, head, f"Project {role}", PROJECT, {**arg, "role": role}),
                _lens(snap, head, "Build", BUILD, arg),
            ]
        elif decl.kind == "pairing" and decl.name in checked.pairings:
            arg = {"uri": snap.uri, "plan": decl.target or "", "pairing": decl.name}
            out += [
                _lens(snap, head, "▶ Run plan", RUN_PLAN, arg),
                _lens(snap, head, "Build", BUILD, arg),
            ]
    return out


def register(server: AlphaServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @guarded(list)
    def code_lens(ls: AlphaServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        return lenses(ls.snapshot(params.text_document.uri))
