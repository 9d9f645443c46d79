"""What the model is shown of a tool call: the server's content as text, cut to a size,
fenced as others' content (``agent.others``): a tool's output is not the person's
words, and not instructions to the model."""

from __future__ import annotations

import json

from mcp import types

from agent.others import fence

__all__ = ["render_result"]


def _part_text(part: types.ContentBlock) -> str:
    if isinstance(part, types.TextContent):
        return part.text
    if isinstance(part, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(part, types.ImageContent) else "audio"
        return f"[{kind} {part.mimeType}, {len(part.data) * 3 // 4} bytes, not shown]"
    if isinstance(part, types.ResourceLink):
        return f"[resource {part.name}: {part.uri}]"
    if isinstance(part, types.EmbeddedResource):
        resource = part.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}, {resource.mimeType or 'binary'}, not shown]"
    return f"[{getattr(part, 'type', 'unknown')} content, not shown]"


def result_text(result: types.CallToolResult) -> str:
    """The content of ``result`` as one text."""
    texts = [_part_text(part) for part in result.content]
    if not texts and result.structuredContent is not None:
        texts.append(json.dumps(result.structuredContent, ensure_ascii=False))
    return "\n".join(texts)


def render_result(name: str, result: types.CallToolResult, max_chars: int) -> str:
    """``result`` of the tool ``name`` as the model sees it: fenced, at most ``max_chars``
    of its text (and a line saying how much was cut)."""
    text = result_text(result)
    total = len(text)
    cut = total > max_chars
    if cut:
        text = text[:max_chars]
    title = f"Error reported by the tool {name}" if result.isError else f"Result of the tool {name}"
    shown = fence(title, [("", text or "(empty)")])
    if cut:
        shown += (
            f"\n[result cut: the first {max_chars} of {total} characters are shown; "
            "ask for less, or for a part of it]"
        )
    return shown
