"""External memory providers, discovered at run time (``plugins.memory``).

Nothing is re-exported here.
"""

__all__: list[str] = []
