"""Redis-backed coordination of several gateway replicas.

One gateway process is enough for a small team; past that several replicas run
behind a load balancer and must agree on what only one of them may do. This
package holds those agreements, each one Redis structure and, where a
read-modify-write must be atomic, one Lua script:

- ``SharedSeen``: a platform's retry reaching another replica is dropped;
- ``SharedRateLimiter``: a user's message budget counts every replica;
- ``SharedBudget``: Telegram's per-chat and global send budgets and flood bans;
- ``SessionLeases``: one owner per session, with fencing tokens;
- ``ReplicaMailbox``: hand a message to the owner of its session, losing none
  when a replica restarts or dies;
- ``Handoff``: the owner's lease and its mailbox in one round trip;
- ``ReplicaRegistry``: which replicas are alive;
- ``PollerLock``: one Telegram long poller per bot token;
- ``SharedSpend``: each person's LLM budget counters (held and spent).

Scripts read the Redis server's clock so replicas with skewed clocks agree; a
``clock`` argument (tests only) replaces it. Every failure to reach Redis is a
``ReplicaError``. This package is the only part of ``gateway`` that imports
``redis``, and it imports nothing of the gateway but ``clock`` and ``errors``.
"""

from gateway.replicas._budget import Budget, BudgetState, SharedBudget
from gateway.replicas._common import DEFAULT_PREFIX
from gateway.replicas._coordination import Coordination, token_name
from gateway.replicas._errors import ReplicaError
from gateway.replicas._handoff import Handoff, Routed
from gateway.replicas._leases import Lease, SessionLeases
from gateway.replicas._mailbox import MAX_LEN, Delivery, ReplicaMailbox
from gateway.replicas._ratelimit import SharedRateDecision, SharedRateLimiter
from gateway.replicas._registry import PollerLock, ReplicaRegistry
from gateway.replicas._seen import SharedSeen
from gateway.replicas._spend import SharedSpend, SpendSettle, open_shared_spend

__all__ = [
    "DEFAULT_PREFIX",
    "MAX_LEN",
    "Budget",
    "BudgetState",
    "Coordination",
    "Delivery",
    "Handoff",
    "Lease",
    "PollerLock",
    "ReplicaError",
    "ReplicaMailbox",
    "ReplicaRegistry",
    "Routed",
    "SessionLeases",
    "SharedBudget",
    "SharedRateDecision",
    "SharedRateLimiter",
    "SharedSeen",
    "SharedSpend",
    "SpendSettle",
    "open_shared_spend",
    "token_name",
]
