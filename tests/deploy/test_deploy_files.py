"""The compose file, the Kubernetes manifests and the systemd units: they parse, run the
image and commands that exist, give SIGTERM more time than chorus's shutdown bound,
and the manifests validate against the Kubernetes schemas (offline)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import typer.main
import yaml

from gateway.adapters.slack import SlackSettings
from gateway.adapters.telegram._adapter import WEBHOOK_PATH as TELEGRAM_WEBHOOK_PATH
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
    assert set(services) == {"redis", "gateway", "worker", "backup"}
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
    assert services["worker"]["deploy"]["replicas"] == "${WORKER_REPLICAS:-1}"


def test_compose_grace_and_health_match_the_image() -> None:
    services = compose()["services"]
    assert seconds(services["gateway"]["stop_grace_period"]) > SHUTDOWN_BOUND
    test = services["gateway"]["healthcheck"]["test"]
    assert yaml.safe_load(dockerfile_healthcheck()) == test[1:] and test[0] == "CMD"
    test = services["worker"]["healthcheck"]["test"]  # its /healthz on worker.metrics.port
    assert yaml.safe_load(dockerfile_healthcheck()) == test[1:] and test[0] == "CMD"


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
        assert {m["mountPath"] for m in container["volumeMounts"]} == {
            "/data",
            "/tmp",
            "/run/secrets/chorus",
        }
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
    assert interpolated(services["gateway"]["deploy"]["replicas"], {}) == "2"
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
    assert directives["include"] == ["/tmp/resolver.conf"]  # the network's DNS: see below
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
    assert secret["CHORUS_REDIS__URL"].startswith("redis://:")  # with redis.yaml's password
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


def test_compose_replicas_is_hardened_and_shares_no_disk() -> None:
    services = compose_replicas()["services"]
    for name in ("gateway", "worker"):
        service = services[name]
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / service["build"]["context"]).resolve() == ROOT
        assert service["command"] == ["chorus", name]
        assert service["env_file"] == ".env" and service["restart"] == "unless-stopped"
        assert "no-new-privileges:true" in service["security_opt"]
        assert "memory" in service["deploy"]["resources"]["limits"]
        # CHORUS_HOME: a directory chorus creates in the container's own /tmp tmpfs;
        # the image's VOLUME /data is a tmpfs too (no anonymous volume on disk).
        assert service["environment"]["CHORUS_HOME"].startswith("/tmp/")
        assert {"/tmp", "/data"} <= set(service["tmpfs"])
        assert all(d["condition"] == "service_healthy" for d in service["depends_on"].values())
    test = services["gateway"]["healthcheck"]["test"]
    assert yaml.safe_load(dockerfile_healthcheck()) == test[1:] and test[0] == "CMD"
    test = services["worker"]["healthcheck"]["test"]
    assert yaml.safe_load(dockerfile_healthcheck()) == test[1:] and test[0] == "CMD"
    assert interpolated(services["worker"]["deploy"]["replicas"], {}) == "1"
    assert interpolated(services["worker"]["deploy"]["replicas"], {"WORKER_REPLICAS": "3"}) == "3"
    assert "--appendonly" in services["redis"]["command"]


def test_compose_replicas_postgres_is_the_one_the_gateways_name() -> None:
    data = compose_replicas()
    postgres = data["services"]["postgres"]
    assert postgres["image"] == "docker.io/library/postgres:16"
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    environment = postgres["environment"]
    assert environment["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")  # deploy/.env
    [volume] = postgres["volumes"]
    name, path = volume.split(":")
    assert name in data["volumes"] and path == "/var/lib/postgresql/data"
    assert "memory" in postgres["deploy"]["resources"]["limits"]
    user, db = environment["POSTGRES_USER"], environment["POSTGRES_DB"]
    for service in ("gateway", "worker"):
        url = data["services"][service]["environment"]["DATABASE_URL"]
        password = r"\$\{POSTGRES_PASSWORD:\?[^}]*\}"
        assert re.fullmatch(rf"postgresql://{user}:{password}@postgres:5432/{db}", url)


def interpolated(value: str, values: dict[str, str]) -> str:
    """Compose's ``${NAME}``, ``${NAME:?message}`` and ``${NAME:-default}`` from ``values``."""

    def one(found: re.Match[str]) -> str:
        name, op, default = found.group(1), found.group(2), found.group(3)
        if values.get(name):
            return values[name]
        assert op == ":-", f"{name} has no value and no default"
        return default

    return re.sub(r"\$\{(\w+)(?:(:\?|:-)([^}]*))?\}", one, value)


def test_compose_replicas_environment_is_a_chorus_configuration(tmp_path: Path) -> None:
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    pairs = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    filled = {key: value or "x" * 12 for key, value in pairs.items()}
    for key in ("SLACK_APP_TOKEN", "SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"):
        filled.pop(key)
    filled["CHORUS_AUTH__ALLOWED_USERS"] = filled["CHORUS_AUTH__ADMINS"] = "telegram:1"
    filled["POSTGRES_PASSWORD"] = "p" * 24
    filled["CHORUS_TELEGRAM__WEBHOOK_URL"] = "https://chat.example.com/telegram/webhook"
    filled["CHORUS_TELEGRAM__WEBHOOK_SECRET"] = "s" * 32
    for name in ("gateway", "worker"):
        service = compose_replicas()["services"][name]
        environ = filled | {k: interpolated(v, filled) for k, v in service["environment"].items()}
        environ.pop("CHORUS_HOME", None)
        settings = load_settings(tmp_path / name, environ=environ)
        assert settings.database.url is not None and settings.redis.url is not None
        url = settings.database.url.get_secret_value()
        assert url == "postgresql://chorus:" + "p" * 24 + "@postgres:5432/chorus"


def nginx_contexts(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """Each directive of an nginx config with the blocks it is in (``("http", "server")``)."""
    text = re.sub(r"#[^\n]*", "", text)
    found: list[tuple[tuple[str, ...], list[str]]] = []
    stack: list[str] = []
    for token in re.finditer(r"([^;{}]*)([;{}])", text):
        words, end = token.group(1).split(), token.group(2)
        if end == "{":
            found.append((tuple(stack), words))
            stack.append(words[0])
        elif end == "}":
            stack.pop()
        elif words:
            found.append((tuple(stack), words))
    assert not stack
    return found


def test_the_balancer_is_a_whole_nginx_conf_for_an_unprivileged_read_only_nginx() -> None:
    lb = compose_replicas()["services"]["lb"]
    assert lb["image"] == "docker.io/library/nginx:1.27"
    source, target, mode = lb["volumes"][0].split(":")
    assert (DEPLOY / source).resolve() == DEPLOY / "nginx-replicas.conf"
    assert (target, mode) == ("/etc/nginx/nginx.conf", "ro")  # replaces the image's
    assert lb["read_only"] is True and lb["cap_drop"] == ["ALL"]
    assert "no-new-privileges:true" in lb["security_opt"]
    assert not str(lb["user"]).startswith("0") and "/tmp" in lb["tmpfs"]
    assert "memory" in lb["deploy"]["resources"]["limits"]

    directives = nginx_contexts((DEPLOY / "nginx-replicas.conf").read_text())
    where = {words[0]: context for context, words in directives}
    args = {words[0]: words[1:] for _, words in directives}
    # A main nginx.conf: events and http at the top, server and resolver inside http.
    assert where["events"] == () and where["http"] == ()
    assert where["server"] == ("http",) and where["include"] == ("http",)
    # The resolver line comes from the image's entrypoint (the container's DNS).
    assert args["include"] == ["/tmp/resolver.conf"]
    template = (DEPLOY / "nginx-resolver.conf.template").read_text()
    resolver = nginx_contexts(template.replace("${CHORUS_LB_RESOLVER}", "10.89.0.1"))
    assert resolver == [((), ["resolver", "10.89.0.1", "valid=10s", "ipv6=off"])]
    # A read-only root: the pid file and every temp path in the tmpfs.
    assert args["pid"] == ["/tmp/nginx.pid"]
    temp = [words for _, words in directives if words[0].endswith("_temp_path")]
    assert len(temp) == 5 and all(words[1].startswith("/tmp/") for words in temp)
    # A variable upstream, retried on the next replica on 503.
    assert args["proxy_pass"][0] == args["set"][0] and args["set"][1] == "http://gateway:8080"
    assert {"error", "timeout", "http_503"} <= set(args["proxy_next_upstream"])
    # The health check's path is answered by nginx itself, not proxied.
    health = lb["healthcheck"]["test"][-1]
    path = re.sub(r"^http://127\.0\.0\.1:8080", "", health)
    assert where["location"] == ("http", "server")
    locations = [words for context, words in directives if words[0] == "location"]
    assert ["location", "=", path] in locations
    returns = [context for context, words in directives if words[0] == "return"]
    assert returns and all(context[-1] == "location" for context in returns)


def replica_kinds() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in replicas_documents()}


def test_k8s_replicas_copies_the_base_namespace_and_redis() -> None:
    # kustomize loads no file outside an overlay's directory: these are copies.
    root = DEPLOY / "k8s" / "replicas"
    resources = yaml.safe_load((root / "kustomization.yaml").read_text())["resources"]
    assert {"namespace.yaml", "redis.yaml"} <= set(resources)
    assert all("/" not in name for name in resources)
    for name in ("namespace.yaml", "redis.yaml"):
        assert (root / name).read_text() == (DEPLOY / "k8s" / name).read_text(), name
    assert set(resources) == {p.name for p in root.glob("*.yaml")} - {"kustomization.yaml"}


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_k8s_replicas_overlay_builds_with_kustomize() -> None:
    built = subprocess.run(
        ["kubectl", "kustomize", str(DEPLOY / "k8s" / "replicas")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    names = {(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(built) if d}
    assert names == set(replica_kinds())


def test_k8s_replicas_pods_take_the_database_url_from_the_secret() -> None:
    kinds = replica_kinds()
    secret = kinds[("Secret", "chorus-secrets")]["stringData"]
    config = kinds[("ConfigMap", "chorus-config")]["data"]
    for name in ("chorus-gateway", "chorus-worker"):
        spec = kinds[("Deployment", name)]["spec"]["template"]["spec"]
        [container] = spec["containers"]
        # Named on its own: a Secret without it keeps the pod from starting.
        [env] = [e for e in container["env"] if e["name"] == "DATABASE_URL"]
        ref = {"name": "chorus-secrets", "key": "DATABASE_URL"}
        assert env["valueFrom"]["secretKeyRef"] == ref
        volumes = {v["name"]: v for v in spec["volumes"]}
        mounts = {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}
        assert set(mounts) == {"/data", "/tmp"} and all("emptyDir" in v for v in mounts.values())
    assert not any(kind == "PersistentVolumeClaim" and n == "chorus-home" for kind, n in kinds)
    assert config["CHORUS_HOME"].startswith("/data/")  # a 0700 directory in the emptyDir
    port = kinds[("Service", "chorus-postgres")]["spec"]["ports"][0]["port"]
    assert re.fullmatch(
        rf"postgresql://chorus:[^@]+@chorus-postgres:{port}/chorus", secret["DATABASE_URL"]
    )
    assert ("Service", "chorus-redis") in kinds
    assert secret["CHORUS_REDIS__URL"].startswith("redis://:PASSWORD@chorus-redis:")
    assert "CHORUS_REDIS__URL" not in config


def test_k8s_replicas_gateway_service_and_budget_select_the_gateway_pods() -> None:
    kinds = replica_kinds()
    deployment = kinds[("Deployment", "chorus-gateway")]
    labels = deployment["spec"]["selector"]["matchLabels"]
    assert deployment["spec"]["template"]["metadata"]["labels"] == labels
    assert kinds[("Service", "chorus-gateway")]["spec"]["selector"] == labels
    budget = kinds[("PodDisruptionBudget", "chorus-gateway")]["spec"]
    assert budget["minAvailable"] == 1 and budget["selector"]["matchLabels"] == labels
    config = kinds[("ConfigMap", "chorus-config")]["data"]
    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert float(config["CHORUS_GATEWAY__SHUTDOWN_TIMEOUT"]) < grace
    base = {(d["kind"], d["metadata"]["name"]): d for d in k8s_documents()}
    assert base[("ConfigMap", "chorus-config")]["data"].items() <= config.items()
    base_secret = base[("Secret", "chorus-secrets")]["stringData"]
    assert base_secret.keys() <= kinds[("Secret", "chorus-secrets")]["stringData"].keys()


def test_k8s_replicas_postgres_is_a_non_root_statefulset_on_its_own_claim() -> None:
    kinds = replica_kinds()
    statefulset = kinds[("StatefulSet", "chorus-postgres")]["spec"]
    assert statefulset["serviceName"] == "chorus-postgres"
    [claim] = statefulset["volumeClaimTemplates"]
    spec = statefulset["template"]["spec"]
    [container] = spec["containers"]
    assert container["image"] == "postgres:16"
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] == 999  # the image's postgres user
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    env = {e["name"]: e for e in container["env"]}
    assert env["PGDATA"]["value"].startswith(mounts[claim["metadata"]["name"]] + "/")
    password = env["POSTGRES_PASSWORD"]["valueFrom"]["secretKeyRef"]
    assert password == {"name": "chorus-secrets", "key": "POSTGRES_PASSWORD"}
    assert container["readinessProbe"]["exec"]["command"][0] == "pg_isready"
    assert (
        kinds[("Service", "chorus-postgres")]["spec"]["selector"]
        == (statefulset["selector"]["matchLabels"])
    )


def webhook_paths() -> set[str]:
    """Every path a platform adapter mounts on the webhook port, at its default."""
    slack = SlackSettings()
    return {TELEGRAM_WEBHOOK_PATH, slack.events_path, slack.commands_path}


def nginx_locations(text: str) -> dict[str, list[list[str]]]:
    """Each ``location`` of an nginx config (its arguments joined) and its directives."""
    locations: dict[str, list[list[str]]] = {}
    current: str | None = None
    for context, words in nginx_contexts(text):
        if words[0] == "location":
            current = " ".join(words[1:])
            locations[current] = []
        elif context and context[-1] == "location":
            assert current is not None
            locations[current].append(words)
    return locations


def test_the_balancer_proxies_only_the_webhook_paths() -> None:
    text = (DEPLOY / "nginx-replicas.conf").read_text()
    locations = nginx_locations(text)
    proxied = {
        where
        for where, directives in locations.items()
        if any(d[0] == "proxy_pass" for d in directives)
    }
    assert proxied == {f"= {path}" for path in webhook_paths()}  # exact matches only
    proxy_passes = [words for _, words in nginx_contexts(text) if words[0] == "proxy_pass"]
    assert len(proxy_passes) == len(proxied)  # none outside those locations
    assert locations["/"] == [["return", "404"]]
    assert "9090" not in text and "metrics" not in re.sub(r"#[^\n]*", "", text)


def test_compose_replicas_serve_metrics_and_probes_on_their_own_port() -> None:
    services = compose_replicas()["services"]
    gateway = services["gateway"]
    port = str(gateway["environment"]["CHORUS_GATEWAY__METRICS__PORT"])
    assert port in gateway["expose"] and port != "8080"
    assert "CHORUS_GATEWAY__METRICS__PORT" in gateway["healthcheck"]["test"][-1]


@pytest.mark.parametrize("documents", [k8s_documents, replicas_documents], ids=["base", "replicas"])
def test_k8s_probes_use_the_metrics_port(documents: Any) -> None:
    found = documents()
    config = next(d for d in found if d["kind"] == "ConfigMap")["data"]
    gateway = next(
        d for d in found if d["kind"] == "Deployment" and "gateway" in d["metadata"]["name"]
    )
    [container] = gateway["spec"]["template"]["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports["metrics"] == int(config["CHORUS_GATEWAY__METRICS__PORT"]) != ports["http"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "metrics"


MIGRATION_ALLOWANCE = 300
"""Seconds of a schema migration at start-up the k8s gateway is given before its
liveness probe may restart it (docs/OPERATIONS.md says 5 minutes)."""


def probe_window(probe: dict[str, Any]) -> int:
    """Seconds of failed checks before Kubernetes gives up on ``probe`` (its defaults)."""
    delay = int(probe.get("initialDelaySeconds", 0))
    return delay + int(probe.get("periodSeconds", 10)) * int(probe.get("failureThreshold", 3))


@pytest.mark.parametrize("documents", [k8s_documents, replicas_documents], ids=["base", "replicas"])
def test_k8s_gateway_has_a_startup_probe_that_outlasts_a_migration(documents: Any) -> None:
    """A gateway migrating its schema is not killed mid-way by its liveness probe: a
    startup probe on /healthz (answered while migrating) holds the liveness probe off."""
    gateway = next(
        d for d in documents() if d["kind"] == "Deployment" and "gateway" in d["metadata"]["name"]
    )
    [container] = gateway["spec"]["template"]["spec"]["containers"]
    startup = container.get("startupProbe")
    assert startup is not None, "no startupProbe: the liveness probe runs during a migration"
    assert startup["httpGet"] == container["livenessProbe"]["httpGet"]
    assert startup["httpGet"]["path"] == "/healthz"
    assert probe_window(startup) >= MIGRATION_ALLOWANCE
    assert probe_window(startup) > probe_window(container["livenessProbe"])


def test_k8s_replicas_ingress_routes_only_the_webhook_paths() -> None:
    [ingress] = [d for d in replicas_documents() if d["kind"] == "Ingress"]
    routed = [path for rule in ingress["spec"]["rules"] for path in rule["http"]["paths"]]
    assert {p["path"] for p in routed} == webhook_paths()
    for path in routed:
        assert path["pathType"] == "Exact"
        assert path["backend"]["service"] == {"name": "chorus-gateway", "port": {"name": "http"}}
    assert "defaultBackend" not in ingress["spec"]


def test_k8s_pods_read_their_secrets_from_files_and_redis_needs_its_password(
    tmp_path: Path,
) -> None:
    """No secret in a pod's environment: each is a file of the mounted Secret (<NAME>_FILE),
    and the settings chorus loads from them carry the Redis URL with redis.yaml's password."""
    documents = {(d["kind"], d["metadata"]["name"]): d for d in k8s_documents()}
    secret = documents[("Secret", "chorus-secrets")]["stringData"]
    config = documents[("ConfigMap", "chorus-config")]["data"]
    mounted = tmp_path / "secrets"
    mounted.mkdir()
    for key, value in secret.items():
        (mounted / key).write_text(value or "x" * 16)  # filled in
    for name in ("chorus-gateway", "chorus-worker"):
        spec = documents[("Deployment", name)]["spec"]["template"]["spec"]
        [container] = spec["containers"]
        assert not any("secretRef" in source for source in container["envFrom"])
        [mount] = [m for m in container["volumeMounts"] if m["name"] == "secrets"]
        [volume] = [v for v in spec["volumes"] if v["name"] == "secrets"]
        assert volume["secret"]["secretName"] == "chorus-secrets"
        assert volume["secret"]["defaultMode"] & 0o007 == 0  # not for other users
        files = {e["name"]: e["value"] for e in container["env"] if e["name"].endswith("_FILE")}
        assert {"TELEGRAM_BOT_TOKEN_FILE", "CHORUS_REDIS__URL_FILE"} <= set(files)
        environ = {
            **config,
            **{
                var: str(mounted / Path(path).relative_to(mount["mountPath"]))
                for var, path in files.items()
            },
        }
        settings = load_settings(tmp_path / "home", environ)
        assert settings.redis.url is not None
        assert settings.redis.url.get_secret_value().startswith("redis://:PASSWORD@chorus-redis:")
        assert settings.telegram.token is not None
    [redis] = documents[("Deployment", "chorus-redis")]["spec"]["template"]["spec"]["containers"]
    assert redis["args"][-2:] == ["--requirepass", "$(REDIS_PASSWORD)"]
    env = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in redis["env"]}
    assert env["REDIS_PASSWORD"] == {"name": "chorus-secrets", "key": "REDIS_PASSWORD"}
    assert env["REDISCLI_AUTH"] == env["REDIS_PASSWORD"]  # the readiness probe's redis-cli


def test_k8s_network_policy_lets_only_chorus_pods_reach_redis() -> None:
    policies = {
        d["metadata"]["name"]: d["spec"] for d in k8s_documents() if d["kind"] == "NetworkPolicy"
    }
    assert policies["chorus-default-deny"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    redis = policies["chorus-redis"]
    assert redis["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "redis"
    [rule] = redis["ingress"]
    allowed = {
        peer["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for peer in rule["from"]
    }
    assert allowed == {"gateway", "worker"}
    assert rule["ports"] == [{"protocol": "TCP", "port": 6379}]


def test_k8s_replicas_network_policy_lets_only_chorus_pods_reach_redis_and_postgres() -> None:
    kinds = replica_kinds()
    for component, port in (("redis", 6379), ("postgres", 5432)):
        policy = kinds[("NetworkPolicy", f"chorus-{component}")]["spec"]
        assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == component
        [rule] = policy["ingress"]
        peers = {
            p["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for p in rule["from"]
        }
        assert peers == {"gateway", "worker"}
        assert rule["ports"] == [{"protocol": "TCP", "port": port}]
    assert kinds[("NetworkPolicy", "chorus-default-deny")]["spec"]["podSelector"] == {}


def image_env() -> dict[str, str]:
    """The ENV of deploy/Dockerfile's runtime stage (its last stage, the one that sets
    CHORUS_HOME)."""
    text = (DEPLOY / "Dockerfile").read_text()
    blocks = re.findall(r"^ENV (.*?)\n(?!\s)", text, re.S | re.M)
    [block] = [b for b in blocks if "CHORUS_HOME=" in b]
    return dict(re.findall(r"([A-Z_]+)=(\S+)", block))


def test_k8s_workers_serve_metrics_and_health_on_the_image_s_worker_port() -> None:
    env = image_env()
    assert env["CHORUS_WORKER__METRICS__HOST"] == "0.0.0.0"
    port = int(env["CHORUS_WORKER__METRICS__PORT"])
    base = {(d["kind"], d["metadata"]["name"]): d for d in k8s_documents()}
    for kinds in (base, replica_kinds()):
        spec = kinds[("Deployment", "chorus-worker")]["spec"]["template"]["spec"]
        [container] = spec["containers"]
        assert container["ports"] == [{"name": "metrics", "containerPort": port}]
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
        policy = kinds[("NetworkPolicy", "chorus-worker")]["spec"]
        assert policy["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "worker"
        [rule] = policy["ingress"]
        assert rule["ports"] == [{"protocol": "TCP", "port": port}]
