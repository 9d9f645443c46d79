"""A provider tool's answer: JSON, and every error of the family mapped to the JSON tool error.

A tool answers ``{"success": true, ...}`` or ``{"success": false, "error":
...}``; it never raises. :func:`answer_tool_call` runs a tool and maps what
it raises:

* :class:`~.errors.BadToolInput` — its text (meant for the model);
* :class:`~.errors.NotFound` — ``"<tool>: not found"``;
* :class:`~.errors.BackendFailed` — ``"<tool> could not run: <backend> failed
  (<cause>)"`` (the cause is a class or status, never text);
* :class:`~.errors.NotReady` (or any RuntimeError) — ``"<provider> is not
  ready for this session"``;
* any other :class:`~.errors.ProviderError` (paused, refused, a provider's own
  described error) — its text;
* any other ValueError — the speaker was not a user key.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from .errors import BackendFailed, BadToolInput, NotFound, NotReady, ProviderError

__all__ = ["BAD_ARGUMENTS", "BAD_SPEAKER", "answer_tool_call", "tool_error", "tool_success"]

BAD_ARGUMENTS = "arguments must be a JSON object"
BAD_SPEAKER = "speaker must be a user key such as telegram:12345"


def tool_error(message: str) -> str:
    return json.dumps({"success": False, "error": message}, ensure_ascii=False)


def tool_success(result: Mapping[str, Any]) -> str:
    return json.dumps({"success": True, **result}, ensure_ascii=False)


def answer_tool_call(
    tool_name: str,
    run: Callable[[], Mapping[str, Any]],
    *,
    provider: str,
    backend: str = "the memory backend",
) -> str:
    """The JSON answer of ``run()`` for the tool ``tool_name`` (see the module)."""
    try:
        result = run()
    except BadToolInput as exc:
        return tool_error(str(exc))
    except NotFound:
        return tool_error(f"{tool_name}: not found")
    except BackendFailed as exc:
        return tool_error(f"{tool_name} could not run: {backend} failed ({exc.cause})")
    except NotReady:
        return tool_error(f"{provider} is not ready for this session")
    except ProviderError as exc:
        return tool_error(str(exc))
    except ValueError:
        return tool_error(BAD_SPEAKER)
    except RuntimeError:
        return tool_error(f"{provider} is not ready for this session")
    return tool_success(result)
