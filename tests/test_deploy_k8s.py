"""`alpha deploy k8s`: the JobSet, Service and Secret manifests for digits `star`, validated
against the JobSet CRD's openAPIV3Schema and the Kubernetes core API's Service and Secret
schemas (tests/fixtures/k8s, sources and licence in SOURCES.md), strictly: an object may hold
no field its schema does not name, as `kubectl apply --validate=strict` would refuse it. No
cluster runs here (none can: docs/deploy.md). Then each pod's command, DNS names and ports are
checked against what the executables themselves say was compiled into them (`--describe`)."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from conftest import cli
from test_partitioned import SHORT

FIXTURES = Path(__file__).parent / "fixtures" / "k8s"
IMAGE = "registry.example/alpha-digits:1"


def strict(schema: Any) -> Any:
    """Every object schema that lists its properties closed to others (unless it keeps
    unknown fields on purpose, as `x-kubernetes-preserve-unknown-fields` says)."""
    if isinstance(schema, dict):
        out = {k: strict(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


def validator(kind: str) -> jsonschema.Draft202012Validator:
    if kind == "JobSet":
        schema = json.loads((FIXTURES / "jobset-crd.json").read_text())
    else:
        core = json.loads((FIXTURES / "core-v1.json").read_text())
        schema = {"$ref": f"#/$defs/io.k8s.api.core.v1.{kind}", "$defs": core["$defs"]}
    return jsonschema.Draft202012Validator(strict(schema))


def errors(manifest: dict[str, Any]) -> list[str]:
    found = validator(manifest["kind"]).iter_errors(manifest)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in found]


@pytest.fixture(scope="module")
def emitted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("k8s")
    source = folder / "digits.alpha"
    source.write_text(SHORT)
    into = folder / "out"
    proc = cli("deploy", "k8s", str(source), "--plan", "star", "--image", IMAGE, "-o", str(into))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "nothing was applied here" in proc.stdout
    return into


def load(folder: Path, name: str) -> dict[str, Any]:
    [document] = list(yaml.safe_load_all((folder / name).read_text()))
    assert isinstance(document, dict)
    return document


def test_the_manifests_validate_against_the_jobset_and_core_schemas(emitted: Path) -> None:
    for name in ("jobset.yaml", "service.yaml", "secret.yaml"):
        assert errors(load(emitted, name)) == [], name


def test_the_strict_schemas_refuse_what_a_cluster_would(emitted: Path) -> None:
    """The validation is not vacuous: a misspelt field, a wrong type and a missing required
    field are each refused."""
    jobset = load(emitted, "jobset.yaml")
    misspelt = copy.deepcopy(jobset)
    misspelt["spec"]["replicatedJobs"][0]["replica"] = 1
    assert any("replica" in e for e in errors(misspelt))
    wrong = copy.deepcopy(jobset)
    wrong["spec"]["failurePolicy"]["maxRestarts"] = "none"
    assert errors(wrong)
    nameless = copy.deepcopy(jobset)
    del nameless["spec"]["replicatedJobs"][1]["name"]
    assert any("'name' is a required property" in e for e in errors(nameless))
    service = load(emitted, "service.yaml")
    service["spec"]["clusterIp"] = "None"
    assert any("clusterIp" in e for e in errors(service))


def describe(executable: Path) -> dict[str, Any]:
    out = subprocess.run([str(executable), "--describe"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    body = json.loads(out.stdout)
    assert isinstance(body, dict) and body["event"] == "role"
    return body


def test_each_pod_runs_the_executable_built_for_its_dns_name_and_port(emitted: Path) -> None:
    jobset = load(emitted, "jobset.yaml")
    service = load(emitted, "service.yaml")
    secret = load(emitted, "secret.yaml")
    name = jobset["metadata"]["name"]
    network = jobset["spec"]["network"]
    assert network["enableDNSHostnames"] and network["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": name}
    assert jobset["spec"]["failurePolicy"] == {"maxRestarts": 0}
    copied = {
        line.split()[2]: line.split()[1]
        for line in (emitted / "Dockerfile").read_text().splitlines()
        if line.startswith("COPY build/")
    }
    assert (emitted / "Dockerfile").read_text().splitlines()[1] == "FROM scratch"

    pods: dict[str, dict[str, Any]] = {}  # role (as the executable names it) → what its pod says
    for job in jobset["spec"]["replicatedJobs"]:
        assert job["replicas"] == 1 and job["template"]["spec"]["backoffLimit"] == 0
        pod = job["template"]["spec"]["template"]["spec"]
        assert pod["restartPolicy"] == "Never"
        [container] = pod["containers"]
        [command] = container["command"]
        assert container["image"] == IMAGE
        role = describe(emitted / copied[command])  # the executable the image holds there
        [port] = container["ports"]
        [mount] = container["volumeMounts"]
        [volume] = pod["volumes"]
        [item] = volume["secret"]["items"]
        assert mount["readOnly"] and volume["secret"]["secretName"] == secret["metadata"]["name"]
        assert role["secret_file"] == f"{mount['mountPath']}/{item['path']}"
        assert volume["secret"]["defaultMode"] & 0o077 == 0  # the runtime refuses a shared one
        pods[role["role"]] = {
            "dns": f"{name}-{job['name']}-0-0.{network['subdomain']}",
            "port": port["containerPort"],
            "described": role,
        }
    assert set(pods) == {"hub", *(f"worker[{w}]" for w in range(4))}
    for who, pod in pods.items():
        described = pod["described"]
        if any(k["accept"] for k in described["links"]):
            assert described["listen_port"] == pod["port"], who
            assert described["listen_host"] == ""  # every interface of the pod
        for link in described["links"]:
            if not link["accept"]:  # it dials the peer's pod by its DNS name and port
                peer = pods[link["peer"]]
                assert (link["host"], link["port"]) == (peer["dns"], peer["port"]), role
    value = base64.b64decode(secret["data"]["secret"])
    assert len(value) == 32
    assert (emitted / "secret.yaml").stat().st_mode & 0o077 == 0
