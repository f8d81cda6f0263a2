"""What a build is given and what it gives, as data: the deployment inputs compiled into each
role, the executables made and the manifest naming them. Light on purpose: the faces and the run
read these without loading the code generator."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from alpha_core.build.hosts_file import HostsFile
from alpha_core.support.ports import DEFAULT_PORT_BASE

MANIFEST = "alpha-build.json"


@dataclass(frozen=True)
class BuiltExecutable:
    role: str
    path: str
    target: str
    size: int
    sha256: str
    demand: int = 0  # bytes the role holds at its peak (plan/admission.py)
    headroom: int = 0  # bytes its profile has to spare


@dataclass(frozen=True)
class BuildResult:
    system: str
    identity: str
    params: int
    state: int
    executables: tuple[BuiltExecutable, ...]
    manifest: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Deployment:
    """Deployment inputs: compile-time arguments, never part of what is computed."""

    port_base: int = DEFAULT_PORT_BASE  # below the kernel's ephemeral range (ports.py)
    host: str = "127.0.0.1"
    data_path: str | None = None
    connect_timeout_ms: int = 10_000
    io_timeout_ms: int = 10_000
    checkpoint_dir: str = ""  # where captures go; "" for none
    checkpoint_every: int = 0  # for a build without a plan (a plan says its own)
    cpu: str | None = None  # the host CPU level to generate for (default: the target's baseline)
    resume: str = ""  # a checkpoint or capture folder every role resumes from; "" for fresh
    checkpoint_keep: int = 0  # published captures the root keeps; 0: every one
    secret_file: str = ""  # where every role reads the launch secret; "" for none compiled in
    threads: int = 0  # threads per role for the kernels' tasks; 0: the cores each may use
    hosts: HostsFile | None = None  # each role's own address (--hosts); None: `host` for all
    listen_any: bool = False  # with hosts: listen on every interface, dial the listed address
    gpu_shadow: bool = False  # GPU roles built as their host shadow (a control, never a fallback)
    gpu_uuid: str = ""  # the device every GPU role opens (--gpu-uuid); "" for gpu_index
    gpu_index: int = 0  # else the driver's index of it (--gpu-index)


def role_file_name(role: str) -> str:
    """`worker[3]` → `worker-3`: executable names without shell metacharacters."""
    return role.replace("[", "-").replace("]", "")
