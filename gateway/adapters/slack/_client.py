"""The Slack Web API client chorus uses, and ``auth.test`` for start-up and ``chorus doctor``.

Every call goes through slack_sdk's ``AsyncWebClient`` with two retry handlers: a
429 answer is waited out for as long as its ``Retry-After`` asks (a bounded number
of times) and the same request is sent again, so a rate limit neither loses nor
repeats a message; a dropped connection is retried once. The token travels in the
``Authorization`` header, which slack_sdk redacts from its debug log.
"""

from __future__ import annotations

import logging

from aiohttp import ClientError
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from gateway.adapters._support import Backoff, secret_value
from gateway.adapters.slack._events import BotIdentity
from gateway.adapters.slack._settings import SlackSettings, has_signing_secret, problem

logger = logging.getLogger(__name__)

DEFAULT_API_URL = "https://slack.com/api/"
RATE_LIMIT_RETRIES = 5
"""429 answers one request waits out before it fails."""
REQUEST_TIMEOUT = 30
BAD_TOKEN_ERRORS = frozenset(
    {"invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired"}
)


def usable(settings: SlackSettings) -> None:
    """Raise ``ValueError`` naming the variable when the section cannot work."""
    wrong = problem(settings)
    if wrong is not None:
        raise ValueError(wrong)


def token_of(settings: SlackSettings) -> str:
    return secret_value(settings.bot_token, "slack.bot_token (SLACK_BOT_TOKEN)").strip()


def app_token_of(settings: SlackSettings) -> str:
    return secret_value(settings.app_token, "slack.app_token (SLACK_APP_TOKEN)").strip()


def signing_secret_of(settings: SlackSettings) -> str:
    """The signing secret; "" in Socket Mode, where requests do not come over HTTP."""
    if settings.socket_mode:
        return ""
    return secret_value(settings.signing_secret, "slack.signing_secret (SLACK_SIGNING_SECRET)")


def api_url(settings: SlackSettings) -> str:
    url = settings.api_url or DEFAULT_API_URL
    return url if url.endswith("/") else url + "/"


def build_client(settings: SlackSettings, *, with_token: bool = True) -> AsyncWebClient:
    return AsyncWebClient(
        token=token_of(settings) if with_token else None,
        base_url=api_url(settings),
        timeout=REQUEST_TIMEOUT,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ],
    )


def error_code(exc: SlackApiError) -> str:
    """Slack's short error code (``ratelimited``, ``invalid_auth``, …)."""
    try:
        return str(exc.response.get("error") or exc.response.status_code)
    except Exception:
        return "error"


async def who_am_i(client: AsyncWebClient) -> BotIdentity:
    """``auth.test``: the bot's user id and name. Raises ``SlackApiError``/``ClientError``."""
    answer = await client.auth_test()
    return BotIdentity(
        user_id=str(answer.get("user_id") or ""),
        name=str(answer.get("user") or ""),
        bot_id=str(answer.get("bot_id") or ""),
        team_id=str(answer.get("team_id") or ""),
    )


async def identify(client: AsyncWebClient, backoff: Backoff) -> BotIdentity | str:
    """``auth.test`` until it works: who the bot is, or why the token will never work."""
    while True:
        try:
            me = await who_am_i(client)
        except SlackApiError as exc:
            code = error_code(exc)
            if code in BAD_TOKEN_ERRORS:
                return f"Slack rejected the bot token ({code}); check SLACK_BOT_TOKEN"
            logger.warning("slack: auth.test failed (%s); retrying in %.1fs", code, backoff.delay)
        except (ClientError, TimeoutError, OSError) as exc:
            name = type(exc).__name__
            logger.warning("slack: auth.test failed (%s); retrying in %.1fs", name, backoff.delay)
        else:
            logger.info("slack connected as @%s (%s)", me.name, me.user_id)
            return me
        await backoff.wait()


async def describe_bot(settings: SlackSettings) -> tuple[bool, str]:
    """For ``chorus doctor``: (ok, which bot the token belongs to, or what is wrong)."""
    try:
        usable(settings)
        client = build_client(settings)
    except ValueError as exc:
        return False, str(exc)
    try:
        me = await who_am_i(client)
    except SlackApiError as exc:
        code = error_code(exc)
        if code in BAD_TOKEN_ERRORS:
            return False, f"Slack rejected the bot token ({code}; check SLACK_BOT_TOKEN)"
        return False, f"auth.test failed: {code}"
    except (ClientError, TimeoutError, OSError) as exc:
        return False, f"cannot reach the Slack API at {api_url(settings)} ({type(exc).__name__})"
    mode = "Events API over HTTP"
    if settings.socket_mode:
        try:
            await client.apps_connections_open(app_token=app_token_of(settings))
        except SlackApiError as exc:
            code = error_code(exc)
            if code in BAD_TOKEN_ERRORS:
                return False, f"Slack rejected the app-level token ({code}; check SLACK_APP_TOKEN)"
            return False, f"apps.connections.open failed: {code}"
        except (ClientError, TimeoutError, OSError) as exc:
            return False, f"cannot open a Socket Mode connection ({type(exc).__name__})"
        mode = "Socket Mode"
        if has_signing_secret(settings):
            mode += " (SLACK_SIGNING_SECRET is set too, and unused)"
    return True, f"connected as @{me.name} ({me.user_id}) in team {me.team_id}; {mode}"


def authorization(
    me: BotIdentity | None, token: str, enterprise_id: str | None, team_id: str | None
) -> AuthorizeResult:
    """What bolt acts as for a request: the identity found at start-up, with its token."""
    if me is None:
        raise RuntimeError("slack adapter is not connected yet")
    return AuthorizeResult(
        enterprise_id=enterprise_id,
        team_id=team_id or me.team_id,
        bot_user_id=me.user_id,
        bot_id=me.bot_id or None,
        bot_token=token,
    )
