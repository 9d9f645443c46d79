"""Both ways to connect configured: Socket Mode wins, and Slack's HTTP requests are told so.

With ``SLACK_APP_TOKEN`` and ``SLACK_SIGNING_SECRET`` both set the adapter uses Socket
Mode; the gateway logs that once at start, and the events and commands paths answer
404 with a hint instead of taking requests nothing checks or answers.
"""

from __future__ import annotations

from aiohttp import web

from gateway.adapters.slack._settings import SlackSettings, has_signing_secret

HINT = (
    "This chorus gateway takes Slack over Socket Mode (SLACK_APP_TOKEN is set), not over "
    "HTTP. Turn Socket Mode off in the app's settings and unset SLACK_APP_TOKEN to use "
    "this URL, or keep Socket Mode and unset SLACK_SIGNING_SECRET."
)


def both_configured(settings: SlackSettings) -> bool:
    return settings.socket_mode and has_signing_secret(settings)


def both_notice(settings: SlackSettings) -> str:
    """The start-up line for an operator who configured both ways."""
    return (
        "slack: SLACK_APP_TOKEN and SLACK_SIGNING_SECRET are both set: using Socket Mode; "
        f"requests to {settings.events_path} and {settings.commands_path} get 404 "
        "(unset SLACK_APP_TOKEN to use the Events API over HTTP)"
    )


async def not_over_http(request: web.Request) -> web.StreamResponse:
    """A request from Slack over HTTP while the adapter uses Socket Mode."""
    return web.json_response({"error": "not_found", "hint": HINT}, status=404)
