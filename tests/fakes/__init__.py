"""In-process fakes of the network services the product talks to."""

from .openai_server import FakeOpenAI, Reply, ToolCall

__all__ = ["FakeOpenAI", "Reply", "ToolCall"]
