"""What operators watch: the HTTP server (probes, metrics, webhooks), metrics, activity."""

from gateway.ops._activity import Activity
from gateway.ops._http import HTTPServer, Readiness
from gateway.ops._metrics import Metrics
from gateway.ops._ops_thread import OpsThread
from gateway.ops._registry import chorus_version
from gateway.ops._replica_metrics import ReplicaMetrics
from gateway.ops._worker_metrics import WorkerMetrics

__all__ = [
    "Activity",
    "HTTPServer",
    "Metrics",
    "OpsThread",
    "Readiness",
    "ReplicaMetrics",
    "WorkerMetrics",
    "chorus_version",
]
