"""`alpha deploy k8s`: a plan's roles as a Kubernetes JobSet, written out, never applied.

One replicatedJob per role (1 replica, 1 pod, no restarts: `backoffLimit: 0`, `restartPolicy:
Never`, `failurePolicy.maxRestarts: 0`, so any role's refusal fails the whole set and nothing
reruns a round). Each pod has a stable DNS name, `<jobset>-<job>-0-0.<subdomain>`, from the
JobSet's network and a headless Service publishing addresses before the pods are ready; those
names are the peer addresses compiled into the executables (a hosts file), resolved by each
role at start-up within its connect deadline. A role listens on every interface of its pod.
The launch secret is a Kubernetes Secret mounted read-only at SECRET_DIR; its path, never its
value, is compiled in. The image is `FROM scratch` with the static executables (and a CSV
data file at the path compiled in): nothing else runs in a pod."""

from __future__ import annotations

import base64
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from alpha_core.build.hosts_file import parse_hosts
from alpha_core.build.outputs import Deployment, role_file_name
from alpha_core.deploy.yaml_text import to_yaml
from alpha_core.link.toolchain import LinkError
from alpha_core.plan.model import Pairing, Plan
from alpha_core.run.launch import new_secret
from alpha_core.support.files import write_secret
from alpha_core.support.ports import DEFAULT_PORT_BASE

SECRET_DIR = "/var/run/alpha"
SECRET_KEY = "secret"
EXE_DIR = "/alpha"
_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}  # kubernetes.io/arch of a target


@dataclass(frozen=True)
class PodRole:
    index: int
    role: str
    job: str  # the replicatedJob's name
    host: str  # the pod's DNS name: what its peers dial
    port: int
    target: str
    executable: str  # inside the image


@dataclass(frozen=True)
class K8sOptions:
    image: str
    name: str | None = None  # the JobSet's name (default: alpha-<plan>)
    namespace: str | None = None
    port_base: int = DEFAULT_PORT_BASE
    timeout_ms: int = 60_000  # pods start in any order and pull images: a long deadline
    data_path: str | None = None


def dns_label(text: str) -> str:
    """`worker[3]` → `worker-3`, `My_Plan` → `my-plan`: an RFC 1123 label."""
    label = re.sub(r"[^a-z0-9-]+", "-", role_file_name(text).lower()).strip("-")
    return label or "x"


_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
# an image reference: [registry[:port]/]path[:tag][@digest], the grammar of the OCI distribution
# reference (docker pull's), so that a value the cluster would refuse is refused here
_HOST_PART = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_DOMAIN = rf"{_HOST_PART}(?:\.{_HOST_PART})*(?::[0-9]+)?"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(
    rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?"
)


def check_options(options: K8sOptions) -> None:
    """--image and --namespace as Kubernetes will read them, refused as `bad-argument` (with
    the value as given, control characters shown) before anything is built."""
    if not options.image or len(options.image) > 4096 or not _IMAGE.fullmatch(options.image):
        raise LinkError(
            "bad-argument",
            f"--image {options.image!r} is not an image reference: "
            "[REGISTRY[:PORT]/]NAME[:TAG][@DIGEST], lowercase name parts, e.g. "
            "registry.example.com/team/alpha-digits:1",
        )
    namespace = options.namespace
    if namespace is not None and not _LABEL.fullmatch(namespace):
        raise LinkError(
            "bad-argument",
            f"--namespace {namespace!r} is not a Kubernetes namespace: at most 63 lowercase "
            "letters, digits and '-', starting and ending with a letter or digit",
        )


def pod_roles(
    plan: Plan, pairing: Pairing | None, jobset: str, options: K8sOptions
) -> list[PodRole]:
    subdomain = jobset
    roles = []
    for i in range(plan.membership.total):
        role = plan.membership.name_of(i)
        job = dns_label(role)
        pod = f"{jobset}-{job}-0-0"
        if len(pod) > 63:
            raise LinkError(
                "bad-argument",
                f"the pod name {pod} is {len(pod)} characters; a DNS label holds 63: "
                "give a shorter --name",
            )
        target = pairing.host_of(i) if pairing is not None else "x86_64"
        exe = f"{EXE_DIR}/{role_file_name(role)}"
        roles.append(
            PodRole(i, role, job, f"{pod}.{subdomain}", options.port_base + i, target, exe)
        )
    return roles


def _metadata(name: str, namespace: str | None, **extra: object) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "labels": {"app.kubernetes.io/name": "alpha"}}
    if namespace:
        meta["namespace"] = namespace
    return {**meta, **extra}


def service(jobset: str, namespace: str | None) -> dict[str, object]:
    """The headless Service whose records are the pods' names (published before they are
    ready: a role resolves its peers while they are still starting)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(jobset, namespace),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"jobset.sigs.k8s.io/jobset-name": jobset},
        },
    }


def secret(jobset: str, namespace: str | None, value: bytes) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(f"{jobset}-secret", namespace),
        "type": "Opaque",
        "data": {SECRET_KEY: base64.b64encode(value).decode("ascii")},
    }


def _pod(p: PodRole, jobset: str, image: str) -> dict[str, object]:
    container = {
        "name": p.job,
        "image": image,
        "command": [p.executable],
        "ports": [{"containerPort": p.port, "name": "alpha", "protocol": "TCP"}],
        "volumeMounts": [{"name": "alpha-secret", "mountPath": SECRET_DIR, "readOnly": True}],
    }
    return {
        "restartPolicy": "Never",
        "automountServiceAccountToken": False,
        "nodeSelector": {"kubernetes.io/arch": _ARCH.get(p.target, p.target)},
        "containers": [container],
        "volumes": [
            {
                "name": "alpha-secret",
                "secret": {
                    "secretName": f"{jobset}-secret",
                    "defaultMode": 0o400,  # the runtime refuses a secret others may read
                    "items": [{"key": SECRET_KEY, "path": SECRET_KEY}],
                },
            }
        ],
    }


def jobset_manifest(
    roles: list[PodRole], jobset: str, namespace: str | None, image: str
) -> dict[str, object]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": _metadata(jobset, namespace),
        "spec": {
            "network": {
                "enableDNSHostnames": True,
                "subdomain": jobset,
                "publishNotReadyAddresses": True,
            },
            "failurePolicy": {"maxRestarts": 0},  # a role's refusal fails the set, once
            "successPolicy": {"operator": "All"},
            "replicatedJobs": [
                {
                    "name": p.job,
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "parallelism": 1,
                            "completions": 1,
                            "backoffLimit": 0,
                            "template": {"spec": _pod(p, jobset, image)},
                        }
                    },
                }
                for p in roles
            ],
        },
    }


def dockerfile(roles: list[PodRole], data: tuple[str, str] | None) -> str:
    lines = [
        "# written by alpha deploy k8s: the static executables and nothing else",
        "FROM scratch",
    ]
    lines += [f"COPY build/{role_file_name(p.role)} {p.executable}" for p in roles]
    if data:
        lines.append(f"COPY {data[0]} {data[1]}")
    return "\n".join(lines) + "\n"


def hosts_text(roles: list[PodRole]) -> str:
    lines = ["# written by alpha deploy k8s: each role at its pod's DNS name"]
    lines += [f"{p.role} {p.host}:{p.port}" for p in roles]
    return "\n".join(lines) + "\n"


def emit_k8s(
    name: str, plan: Plan, pairing: Pairing | None, options: K8sOptions, into: Path
) -> list[PodRole]:
    """The manifests, the image recipe, the executables and the hosts file in `into`."""
    check_options(options)
    jobset = dns_label(options.name or f"alpha-{name}")
    roles = pod_roles(plan, pairing, jobset, options)
    into.mkdir(parents=True, exist_ok=True)
    text = hosts_text(roles)
    (into / "hosts").write_text(text)
    data_path = options.data_path or plan.system.data.path or None
    csv = data_path if plan.system.data.kind != "synthetic" else None
    deployment = Deployment(
        options.port_base,
        "127.0.0.1",
        options.data_path,
        options.timeout_ms,
        options.timeout_ms,
        secret_file=f"{SECRET_DIR}/{SECRET_KEY}",
        hosts=parse_hosts(text, str(into / "hosts")),
        listen_any=True,
    )
    from alpha_core.build.executables import build_plan  # LLVM loads when it builds

    build_plan(plan, pairing, into / "build", deployment)
    copied = None
    if csv:
        (into / "data").mkdir(exist_ok=True)
        shutil.copyfile(csv, into / "data" / Path(csv).name)
        copied = (f"data/{Path(csv).name}", csv)
    (into / "Dockerfile").write_text(dockerfile(roles, copied))
    (into / "jobset.yaml").write_text(
        to_yaml([jobset_manifest(roles, jobset, options.namespace, options.image)])
    )
    (into / "service.yaml").write_text(to_yaml([service(jobset, options.namespace)]))
    # a fresh secret, readable by its owner only, never written through a planted link
    text = to_yaml([secret(jobset, options.namespace, new_secret())])
    write_secret(into / "secret.yaml", text.encode())
    return roles
