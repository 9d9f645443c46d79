"""What operators watch: the HTTP server (probes, metrics, webhooks), metrics, activity."""

from gateway.ops._activity import Activity
from gateway.ops._http import HTTPServer, Readiness
from gateway.ops._metrics import Metrics

__all__ = ["Activity", "HTTPServer", "Metrics", "Readiness"]
