"""The compose file, the Kubernetes manifests and the systemd units: they parse, run the
image and commands that exist, give SIGTERM more time than chorus's shutdown bound,
and the manifests validate against the Kubernetes schemas (offline)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer.main
import yaml

from gateway.cli import app
from gateway.config import load_settings
from gateway.config._loader import NON_SETTING_ENV, WELL_KNOWN_ENV
from gateway.config._sections import GatewaySettings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
K8S_VERSION = "1.30.0"
SHUTDOWN_BOUND = GatewaySettings().shutdown_timeout
CHORUS_COMMANDS = set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def compose() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def k8s_documents() -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    documents: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        documents += [d for d in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text()) if d]
    return documents


def seconds(text: str) -> float:
    found = re.fullmatch(r"(\d+)s", text)
    assert found, text
    return float(found.group(1))


def dockerfile_healthcheck() -> str:
    text = (DEPLOY / "Dockerfile").read_text()
    found = re.search(r"HEALTHCHECK .*?\\\n\s+CMD (\[.*\])", text)
    assert found
    return found.group(1)


def test_compose_runs_the_image_commands_that_exist() -> None:
    services = compose()["services"]
    assert set(services) == {"redis", "gateway", "worker"}
    for name in ("gateway", "worker"):
        service = services[name]
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        context = (DEPLOY / service["build"]["context"]).resolve()
        assert context == ROOT and (context / service["build"]["dockerfile"]).exists()
        command = service["command"]
        assert command[0] == "chorus" and command[1] in CHORUS_COMMANDS
        assert service["volumes"] == ["chorus-home:/data"]
        assert service["env_file"] == ".env"
        assert service["restart"] == "unless-stopped"
        assert service["cap_drop"] == ["ALL"] and service["read_only"] is True
        assert service["environment"]["CHORUS_REDIS__URL"].startswith("redis://redis:")
        assert "memory" in service["deploy"]["resources"]["limits"]
    assert services["gateway"]["command"] == ["chorus", "gateway"]
    assert services["worker"]["command"] == ["chorus", "worker"]
    assert "--appendonly" in services["redis"]["command"]
    assert "replicas" not in services["worker"].get("deploy", {})  # --scale worker=N


def test_compose_grace_and_health_match_the_image() -> None:
    services = compose()["services"]
    assert seconds(services["gateway"]["stop_grace_period"]) > SHUTDOWN_BOUND
    test = services["gateway"]["healthcheck"]["test"]
    assert yaml.safe_load(dockerfile_healthcheck()) == test[1:] and test[0] == "CMD"
    assert services["worker"]["healthcheck"] == {"disable": True}  # no HTTP server


def test_env_example_names_only_variables_chorus_reads(tmp_path: Path) -> None:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    pairs = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    assert {"OPENAI_API_KEY", "TELEGRAM_BOT_TOKEN", "SLACK_APP_TOKEN"} <= set(pairs)
    filled = {key: value or "x" * 12 for key, value in pairs.items()}
    filled.pop("SLACK_APP_TOKEN")  # Slack HTTP mode: signing secret, no app token
    filled.pop("SLACK_BOT_TOKEN")
    filled.pop("SLACK_SIGNING_SECRET")
    filled["CHORUS_AUTH__ALLOWED_USERS"] = "telegram:1"
    filled["CHORUS_AUTH__ADMINS"] = "telegram:1"
    settings = load_settings(tmp_path / "home", environ=filled)  # unknown keys are errors
    assert settings.llm.api_key is not None


@pytest.mark.parametrize(
    "document", k8s_documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_k8s_manifests_validate_against_the_schemas(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, K8S_VERSION, strict=True)


def pods() -> dict[str, dict[str, Any]]:
    return {
        d["metadata"]["name"]: d["spec"]["template"]["spec"]
        for d in k8s_documents()
        if d["kind"] == "Deployment"
    }


def test_k8s_runs_the_image_as_non_root_with_probes_and_grace() -> None:
    specs = pods()
    assert set(specs) == {"chorus-gateway", "chorus-worker", "chorus-redis"}
    for name in ("chorus-gateway", "chorus-worker"):
        spec = specs[name]
        [container] = spec["containers"]
        assert container["command"][0] == "chorus" and container["command"][1] in CHORUS_COMMANDS
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] == 10001  # the image's chorus user
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
        assert {"requests", "limits"} <= set(container["resources"])
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/data", "/tmp"}
    gateway = specs["chorus-gateway"]
    [container] = gateway["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert gateway["terminationGracePeriodSeconds"] > SHUTDOWN_BOUND
    deployments = {d["metadata"]["name"]: d for d in k8s_documents() if d["kind"] == "Deployment"}
    assert deployments["chorus-gateway"]["spec"]["replicas"] == 1
    config = next(d for d in k8s_documents() if d["kind"] == "ConfigMap")["data"]
    assert (
        float(config["CHORUS_GATEWAY__SHUTDOWN_TIMEOUT"]) < gateway["terminationGracePeriodSeconds"]
    )
    assert config["CHORUS_HOME"].startswith("/data/")  # a 0700 directory inside the volume


def test_systemd_units_stop_after_the_shutdown_bound() -> None:
    for unit in sorted((DEPLOY / "systemd").glob("*.service")):
        text = unit.read_text()
        found = re.search(r"^TimeoutStopSec=(\d+)$", text, re.MULTILINE)
        assert found, unit.name
        assert float(found.group(1)) > SHUTDOWN_BOUND, unit.name
        command = re.search(r"^ExecStart=\S+ (\w+)", text, re.MULTILINE)
        assert command and command.group(1) in CHORUS_COMMANDS, unit.name


def test_env_example_lists_every_variable_chorus_reads_outside_its_settings() -> None:
    text = (DEPLOY / ".env.example").read_text()
    named = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))
    assert set(WELL_KNOWN_ENV) | set(NON_SETTING_ENV) <= named


# -- several replicas ------------------------------------------------------------------


def compose_replicas() -> dict[str, Any]:
    data = yaml.safe_load((DEPLOY / "compose.replicas.yaml").read_text())
    assert isinstance(data, dict)
    return data


def replicas_documents() -> list[dict[str, Any]]:
    root = DEPLOY / "k8s" / "replicas"
    kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
    documents: list[dict[str, Any]] = []
    for name in kustomization["resources"]:
        documents += [d for d in yaml.safe_load_all((root / name).read_text()) if d]
    return documents


def test_compose_replicas_runs_two_gateways_behind_a_balancer_on_shared_stores() -> None:
    services = compose_replicas()["services"]
    assert set(services) == {"redis", "postgres", "gateway", "lb", "worker"}
    for name in ("gateway", "worker"):
        service = services[name]
        env = service["environment"]
        assert env["CHORUS_REDIS__URL"].startswith("redis://redis:")
        assert env["DATABASE_URL"].startswith("postgresql://chorus:")
        assert "@postgres:5432/" in env["DATABASE_URL"]
        assert service["command"][0] == "chorus" and service["command"][1] in CHORUS_COMMANDS
        assert service["read_only"] is True and service["cap_drop"] == ["ALL"]
        assert "volumes" not in service  # nothing shared on disk
        assert set(service["depends_on"]) == {"redis", "postgres"}
    assert services["gateway"]["command"] == ["chorus", "gateway"]  # the host name is the id
    assert services["gateway"]["deploy"]["replicas"] == 2
    assert "ports" not in services["gateway"]
    assert seconds(services["gateway"]["stop_grace_period"]) > SHUTDOWN_BOUND
    assert services["postgres"]["healthcheck"]["test"][1] == "pg_isready"
    assert services["lb"]["ports"] == ["8080:8080"]
    mount = services["lb"]["volumes"][0]
    assert mount.startswith("./nginx-replicas.conf:") and mount.endswith(":ro")


def test_the_balancer_skips_a_replica_that_answers_503() -> None:
    conf = (DEPLOY / "nginx-replicas.conf").read_text()
    directives = {
        line.strip().split()[0]: line.strip().rstrip(";").split()[1:]
        for line in conf.splitlines()
        if line.strip() and not line.strip().startswith("#") and line.strip().endswith(";")
    }
    assert directives["resolver"][0] == "127.0.0.11"  # Docker's DNS: scaled replicas are found
    assert directives["set"] == ["$gateway", "http://gateway:8080"]
    assert directives["proxy_pass"] == ["$gateway"]
    assert {"error", "timeout", "http_503"} <= set(directives["proxy_next_upstream"])
    assert directives["listen"] == ["8080"]


@pytest.mark.parametrize(
    "document", replicas_documents(), ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_k8s_replicas_manifests_validate_against_the_schemas(document: dict[str, Any]) -> None:
    kubernetes_validate.validate(document, K8S_VERSION, strict=True)


def test_k8s_replicas_run_two_gateways_without_a_shared_volume() -> None:
    documents = replicas_documents()
    deployments = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Deployment"}
    assert set(deployments) == {"chorus-gateway", "chorus-worker", "chorus-redis"}
    del deployments["chorus-redis"]  # the base's Redis, with its volume
    gateway = deployments["chorus-gateway"]
    assert gateway["spec"]["replicas"] == 2
    assert gateway["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    for deployment in deployments.values():
        spec = deployment["spec"]["template"]["spec"]
        assert all("persistentVolumeClaim" not in v for v in spec["volumes"])
        assert "affinity" not in spec
        [container] = spec["containers"]
        assert {r["secretRef"]["name"] for r in container["envFrom"] if "secretRef" in r} == {
            "chorus-secrets"
        }
        assert spec["securityContext"]["runAsUser"] == 10001
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
    [container] = gateway["spec"]["template"]["spec"]["containers"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert gateway["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > SHUTDOWN_BOUND
    secret = next(d for d in documents if d["kind"] == "Secret")["stringData"]
    assert secret["DATABASE_URL"].startswith("postgresql://")
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]
    assert config["CHORUS_REDIS__URL"].startswith("redis://")
    assert config["CHORUS_TELEGRAM__WEBHOOK_URL"].endswith("/telegram/webhook")
    assert {d["kind"] for d in documents} >= {"StatefulSet", "PodDisruptionBudget", "Service"}
    settings = load_settings(
        Path("/nonexistent-home"),
        environ={
            **config,
            **{key: value or "x" * 16 for key, value in secret.items()},  # filled in
            "CHORUS_HOME": "/nonexistent-home",
        },
        create_home=False,
    )
    assert settings.database.url is not None and settings.redis.url is not None
