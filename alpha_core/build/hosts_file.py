"""Per-role addresses: the hosts file of `alpha build/run --hosts FILE` (a deployment input).

One line per role, `ROLE HOST[:PORT]`, `#` to the end of a line a comment:

    hub        10.77.0.1
    worker[0]  10.77.0.2:29001
    worker[1]  [fd00::2]:29002
    worker[2]  node-b.cluster.local

HOST is an IPv4 address, an IPv6 address (in brackets when a port follows) or a host name; a
name is resolved by each role at start-up, within its connect deadline (`peer-unresolvable`).
A port defaults to the plan's port for the role (the port base plus its index). Each role
listens on its own address and every link dials the peer's own address.

Every role of the plan is listed exactly once, or the build refuses by name with the line:
`hosts-malformed`, `hosts-unknown-role`, `hosts-duplicate`, `hosts-incomplete`.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from alpha_core.diagnostics import Diagnostic
from alpha_core.diagnostics.diagnostic import Related
from alpha_core.plan.schedule import RoleSchedule
from alpha_core.support.span import LineIndex, Span

_LABEL = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"{_LABEL}(\.{_LABEL})*\.?")
_ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?")
_TOKEN = re.compile(r"\S+")
_LISTED = 8  # missing roles named in a hosts-incomplete message before "and N more"


@dataclass(frozen=True)
class HostEntry:
    role: str
    host: str  # as the runtime gets it: an address without brackets, or a name
    port: int | None  # None: the plan's port for the role
    role_span: Span
    address_span: Span


@dataclass(frozen=True)
class HostsFile:
    path: str
    text: str
    entries: tuple[HostEntry, ...]

    def address_of(self, role: str) -> HostEntry | None:
        return next((e for e in self.entries if e.role == role), None)


class HostsRefused(Exception):
    """The hosts file's refusals, with its text and path so a face can show the lines."""

    def __init__(self, path: str, text: str, diagnostics: Sequence[Diagnostic]) -> None:
        super().__init__("; ".join(d.message for d in diagnostics))
        self.path = path
        self.text = text
        self.diagnostics = list(diagnostics)

    def located(self) -> list[Diagnostic]:
        """The refusals without spans, each message led by FILE:LINE:COL, for a face that
        shows diagnostics against another text (alpha-tui shows the .alpha file's)."""
        index = LineIndex(self.text)
        out = []
        for d in self.diagnostics:
            where = self.path
            if d.span is not None:
                at = index.position(d.span.start)
                where += f":{at.line + 1}:{at.column + 1}"
            out.append(Diagnostic(d.name, f"{where}: {d.message}", None, help=d.help))
        return out


def is_host(host: str) -> bool:
    """Whether `host` is an IP address or a host name: the one rule for `--host` and for the
    addresses of a hosts file. Dotted digits that are not an address (`10.0.1`) are neither,
    though the resolver would read them as one (10.0.0.1)."""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    return bool(
        len(host) <= 253 and _HOSTNAME.fullmatch(host) and not host.replace(".", "").isdigit()
    )


def host_problem(host: str) -> str | None:
    """Why `host` is neither an IP address nor a host name, or None."""
    return None if is_host(host) else f"`{host}` is neither an IP address nor a host name"


def split_address(word: str) -> tuple[str, str | None]:
    """`[fd00::1]:80` → (`fd00::1`, `80`); `fd00::1` → (`fd00::1`, None); `a:80` → (`a`, `80`)."""
    if word.startswith("["):
        close = word.find("]")
        if close < 0:
            return word, None
        rest = word[close + 1 :]
        return word[1:close], (rest[1:] if rest.startswith(":") else None)
    if word.count(":") == 1:
        host, port = word.split(":")
        return host, port
    return word, None  # a bare IPv6 address (no port), or a host without a port


def _entry(path: str, line: str, at: int) -> HostEntry | Diagnostic | None:
    body = line.split("#", 1)[0]
    words = [(m.group(), Span(at + m.start(), at + m.end())) for m in _TOKEN.finditer(body)]
    if not words:
        return None
    if len(words) != 2:
        whole = Span(words[0][1].start, words[-1][1].end)
        return Diagnostic(
            "hosts-malformed",
            f"a line of {path} is `ROLE HOST[:PORT]`, not {len(words)} words",
            whole,
            help="e.g. `worker[3] 10.77.0.4:29003`; `#` starts a comment",
        )
    (role, role_span), (word, address_span) = words
    if not _ROLE.fullmatch(role):
        return Diagnostic("hosts-malformed", f"`{role}` is not a role name", role_span)
    host, port_text = split_address(word)
    if word.startswith("["):
        close = word.find("]")
        if close < 0 or word[close + 1 :] not in ("", f":{port_text}"):
            return Diagnostic(
                "hosts-malformed", f"`{word}` is not `[IPV6]` or `[IPV6]:PORT`", address_span
            )
        try:
            if not isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address):
                raise ValueError(host)
        except ValueError:
            return Diagnostic(
                "hosts-malformed", f"`{host}` in brackets is not an IPv6 address", address_span
            )
    problem = host_problem(host)
    if problem:
        return Diagnostic("hosts-malformed", problem, address_span)
    port = None
    if port_text is not None:
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            return Diagnostic(
                "hosts-malformed", f"port `{port_text}` is not 1 to 65535", address_span
            )
        port = int(port_text)
    return HostEntry(role, host, port, role_span, address_span)


def parse_hosts(text: str, path: str) -> HostsFile:
    """The entries of a hosts file; raises HostsRefused (`hosts-malformed`, `hosts-duplicate`)
    for lines that are not entries and roles given twice. Which roles there must be is the
    plan's to say (check_hosts)."""
    entries: list[HostEntry] = []
    refusals: list[Diagnostic] = []
    first: dict[str, HostEntry] = {}
    at = 0
    for line in text.splitlines(keepends=True):
        got = _entry(path, line.rstrip("\r\n"), at)
        at += len(line)
        if isinstance(got, Diagnostic):
            refusals.append(got)
        elif got is not None:
            if got.role in first:
                refusals.append(
                    Diagnostic(
                        "hosts-duplicate",
                        f"role `{got.role}` is given twice in {path}",
                        got.role_span,
                        (Related(first[got.role].role_span, "first given here"),),
                        help="every role has exactly one address",
                    )
                )
                continue
            first[got.role] = got
            entries.append(got)
    if refusals:
        raise HostsRefused(path, text, refusals)
    return HostsFile(path, text, tuple(entries))


def read_hosts(path: str) -> HostsFile:
    """The hosts file at `path`; HostsRefused `hosts-unreadable` when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not UTF-8 text"
        raise HostsRefused(
            path,
            "",
            [Diagnostic("hosts-unreadable", f"cannot read hosts file {path}: {why}", None)],
        ) from None
    return parse_hosts(text, path)


def _same_host(host: str) -> str:
    """The form two spellings of one host share: an address normalised (`::0:1` is `::1`), a
    name in lowercase without its final dot."""
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host.lower().rstrip(".")


def _shared_addresses(hosts: HostsFile, roles: Sequence[str], port_base: int) -> list[Diagnostic]:
    """`hosts-duplicate` for every role whose HOST:PORT (its port given, or the plan's port
    for it) is an earlier role's: two roles cannot both listen there, and a peer dialling it
    would reach whichever bound first."""
    index = {role: i for i, role in enumerate(roles)}
    first: dict[tuple[str, int], HostEntry] = {}
    found = []
    for e in hosts.entries:
        if e.role not in index:
            continue
        key = (_same_host(e.host), e.port or port_base + index[e.role])
        if key in first:
            shown = f"[{e.host}]" if ":" in e.host else e.host
            found.append(
                Diagnostic(
                    "hosts-duplicate",
                    f"role `{e.role}` is given {shown}:{key[1]}, the address of "
                    f"`{first[key].role}`",
                    e.address_span,
                    (Related(first[key].address_span, f"`{first[key].role}` is here"),),
                    help="every role has an address of its own: another port or another host",
                )
            )
        else:
            first[key] = e
    return found


def check_hosts(
    hosts: HostsFile, roles: Sequence[str], plan: str, port_base: int | None = None
) -> None:
    """Raises HostsRefused unless `hosts` lists exactly the `roles` of `plan`, each at an
    address of its own (given `port_base`, the port of a role whose line names none)."""
    known = set(roles)
    refusals = []
    for e in hosts.entries:
        if e.role not in known:
            refusals.append(
                Diagnostic(
                    "hosts-unknown-role",
                    f"plan `{plan}` has no role `{e.role}`",
                    e.role_span,
                    help=f"its roles are {_listed(list(roles))} (as `alpha project` prints them)",
                )
            )
    listed = {e.role for e in hosts.entries}
    missing = [r for r in roles if r not in listed]
    if missing:
        refusals.append(
            Diagnostic(
                "hosts-incomplete",
                f"{hosts.path} gives no address for {len(missing)} of the {len(roles)} roles "
                f"of plan `{plan}`: {_listed(missing)}",
                None,
                help="add a line `ROLE HOST[:PORT]` for each",
            )
        )
    if port_base is not None:
        refusals += _shared_addresses(hosts, roles, port_base)
    if refusals:
        raise HostsRefused(hosts.path, hosts.text, refusals)


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def role_addresses(
    hosts: HostsFile, roles: Sequence[str], port_base: int
) -> tuple[tuple[str, int], ...]:
    """(host, port) of every role, in membership order (check_hosts first)."""
    addresses = []
    for index, role in enumerate(roles):
        entry = hosts.address_of(role)
        assert entry is not None, role
        addresses.append((entry.host, entry.port or port_base + index))
    return tuple(addresses)


def placed(
    schedule: RoleSchedule, addresses: Sequence[tuple[str, int]], listen_any: bool = False
) -> RoleSchedule:
    """The schedule with its own listening address and each dialled peer's address from
    `addresses` (by role index). `listen_any`: listen on every interface of the host (where
    the address peers dial is not one the role can bind, behind a Kubernetes Service)."""
    links = tuple(
        k if k.accept else replace(k, host=addresses[k.peer][0], port=addresses[k.peer][1])
        for k in schedule.links
    )
    host, port = addresses[schedule.index]
    listens = any(k.accept for k in schedule.links)
    return replace(
        schedule,
        links=links,
        listen_host="" if listen_any else host,
        listen_port=port if listens else 0,
    )
