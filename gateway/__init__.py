"""chorus's service: platforms in, replies out, sessions, commands, access, HTTP, CLI.

A namespace of subpackages, each naming its public surface in its own
``__init__`` (``gateway.adapters``, ``gateway.sessions``, ``gateway.app``, …),
beside the few modules every part shares (``events``, ``errors``, ``clock``,
``logs``) and the intake (``runner``). Nothing is re-exported here.
"""

__all__: list[str] = []
