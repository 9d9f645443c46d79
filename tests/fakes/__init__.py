"""In-process fakes of the network services the product talks to."""

from .clock import FakeClock, JumpClock
from .openai_server import FakeOpenAI, Reply, ToolCall
from .redis_server import RedisServer

__all__ = ["FakeClock", "FakeOpenAI", "JumpClock", "RedisServer", "Reply", "ToolCall"]
