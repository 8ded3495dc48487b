"""Server-sent events framing: OpenAI's `data:` lines and Anthropic's named events."""

from __future__ import annotations

import json


def data(payload: dict | str) -> str:
    """One OpenAI-style event (`data: {...}`); a str payload is sent verbatim ("[DONE]")."""
    text = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    return f"data: {text}\n\n"


def event(name: str, payload: dict) -> str:
    """One named event, as Anthropic and the Responses API send them."""
    return f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


DONE = data("[DONE]")

# Proxies must pass events through as they come, not buffer or cache them.
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def response(events):
    """A streaming HTTP response of already-framed SSE text."""
    from fastapi.responses import StreamingResponse

    return StreamingResponse(events, media_type="text/event-stream", headers=HEADERS)
