"""Settings of the gateway layer: sessions, auth and the service (platforms have their own)."""

from __future__ import annotations

from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from memory.settings import LIVE, RESTART


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionsSettings(_Section):
    """The ``sessions`` section: scope, expiry and concurrency."""

    idle_minutes: Annotated[float, LIVE] = Field(240, gt=0)
    daily_reset_hour: Annotated[int | None, LIVE] = Field(4, ge=0, le=23)
    timezone: Annotated[str, LIVE] = "UTC"
    scope: Annotated[Literal["user", "chat"], RESTART] = "user"
    threads: Annotated[Literal["separate", "merged"], RESTART] = "separate"
    busy: Annotated[Literal["queue", "interrupt"], LIVE] = "queue"
    max_live: Annotated[int, LIVE] = Field(1000, gt=0)
    max_concurrent_turns: Annotated[int, RESTART] = Field(64, gt=0)
    handoff: Annotated[bool, LIVE] = True
    retention_days: Annotated[float | None, LIVE] = Field(
        None,
        gt=0,
        description="Transcripts of sessions that ended longer ago than this are purged "
        "with their search index rows (hourly); null keeps them.",
    )
    resume_pending_minutes: Annotated[float, LIVE] = Field(
        10,
        ge=0,
        description="Messages left unanswered by a restart younger than this are "
        "answered after it; older ones get a short notice instead.",
    )

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {value!r}") from exc
        return value


class AuthSettings(_Section):
    """The ``auth`` section: deny by default."""

    admins: Annotated[list[str], LIVE] = Field(
        default_factory=list, description="platform:id of each admin."
    )
    allowed_users: Annotated[list[str], LIVE] = Field(default_factory=list)
    policy: Annotated[Literal["allowlist", "pairing", "open"], LIVE] = "allowlist"
    rate_limit_per_minute: Annotated[int, LIVE] = Field(
        20, ge=0, description="Messages per user; 0 disables."
    )
    pairing_code_ttl_minutes: Annotated[int, LIVE] = Field(60, gt=0)
    pairing_codes_per_hour: Annotated[int, LIVE] = Field(
        3, gt=0, description="Codes one unknown user may ask for."
    )
    stranger_notices_per_minute: Annotated[int, LIVE] = Field(
        20,
        gt=0,
        description="Notices to people the bot does not serve (refusals, pairing codes) "
        "a minute, all together; beyond it they are told nothing until the minute is over.",
    )


class HTTPSettings(_Section):
    host: Annotated[str, RESTART] = "127.0.0.1"
    port: Annotated[int, RESTART] = Field(8080, ge=0, le=65535)


class MetricsSettings(_Section):
    """``gateway.metrics``: a listener of its own for /metrics and the probes."""

    port: Annotated[int | None, RESTART] = Field(
        None,
        ge=0,
        le=65535,
        description="Serve /metrics, /healthz and /readyz on this port only (the webhook "
        "port then answers 404 for them); unset: on gateway.http.port.",
    )
    host: Annotated[str | None, RESTART] = Field(
        None, description="Address of that listener; unset: gateway.http.host."
    )


class GatewaySettings(_Section):
    """The ``gateway`` section: the service process."""

    http: HTTPSettings = Field(default_factory=HTTPSettings)
    metrics: MetricsSettings = Field(default_factory=MetricsSettings)
    shutdown_timeout: Annotated[float, LIVE] = Field(30.0, gt=0)
    group_require_mention: Annotated[bool, LIVE] = True
    require_all_platforms: Annotated[bool, RESTART] = Field(
        False,
        description="Stop the gateway (exit 2) when a platform rejects its token; by default "
        "that platform is reported failed (/readyz, the log) and the others keep serving.",
    )
    replica_id: Annotated[str | None, RESTART] = Field(
        None,
        min_length=1,
        max_length=100,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="This replica's name among several (redis.url and database.url set); "
        "unique per process; default: the host name. `chorus gateway --replica-id` sets it.",
    )
    lease_seconds: Annotated[float, RESTART] = Field(
        15.0,
        ge=1.0,
        description="Replicas: how long a replica's hold on a session (and its heartbeat) "
        "lasts unrenewed; a replica that died hands its sessions over after this.",
    )
    orphan_seconds: Annotated[float, RESTART] = Field(
        10.0,
        ge=1.0,
        description="Replicas: a delivery recorded this long ago that never reached its "
        "session's owner (its replica died in between) is handed on by another replica.",
    )

    @model_validator(mode="after")
    def _metrics_on_a_port_of_its_own(self) -> GatewaySettings:
        port = self.metrics.port
        if (
            port
            and port == self.http.port
            and (self.metrics.host or self.http.host) == self.http.host
        ):
            raise ValueError(
                f"gateway.metrics.port {port} is gateway.http.port too: give the metrics "
                "their own port, or leave gateway.metrics.port unset to serve them there"
            )
        return self


class WorkerMetricsSettings(_Section):
    """``worker.metrics``: ``chorus worker``'s own listener for /metrics and /healthz."""

    port: Annotated[int | None, RESTART] = Field(
        None,
        ge=0,
        le=65535,
        description="Serve the worker's /metrics and /healthz on this port; unset: no "
        "listener. Give each worker on one host its own (a gateway's is gateway.metrics.port).",
    )
    host: Annotated[str, RESTART] = Field(
        "127.0.0.1", description="Address of that listener (0.0.0.0 in a container)."
    )


class WorkerSettings(_Section):
    """The ``worker`` section: ``chorus worker`` processes."""

    metrics: WorkerMetricsSettings = Field(default_factory=WorkerMetricsSettings)


class SecretsSettings(_Section):
    """The ``secrets`` section: the key that seals each person's secrets (``/secret``)."""

    key: Annotated[SecretStr | None, RESTART] = None
    """``CHORUS_SECRET_KEY``; without it no secret is stored."""
