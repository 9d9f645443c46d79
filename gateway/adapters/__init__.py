"""Platform adapters: each turns one platform's updates into ``InboundMessage``s.

Adapters only enqueue: they hand messages to the ``on_message`` callback and
never import the runner, the agent or memory.
"""

from gateway.adapters.base import AdapterCapabilities, BaseAdapter, MessageHandler

__all__ = ["AdapterCapabilities", "BaseAdapter", "MessageHandler"]
