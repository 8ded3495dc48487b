"""Server-sent events framing: OpenAI's `data:` lines and Anthropic's named events."""

from __future__ import annotations

import json


# Characters that str.splitlines (and so httpx's aiter_lines, and many hand-written SSE readers)
# takes for line ends, though SSE ends lines only at CR or LF. JSON escapes the control ones;
# these three it leaves raw, and a model may well generate them.
_LINE_BREAKS = str.maketrans({"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json(payload: dict) -> str:
    return json.dumps(payload, ensure_ascii=False).translate(_LINE_BREAKS)


def data(payload: dict | str) -> str:
    """One OpenAI-style event (`data: {...}`); a str payload is sent verbatim ("[DONE]")."""
    text = payload if isinstance(payload, str) else _json(payload)
    return f"data: {text}\n\n"


def event(name: str, payload: dict) -> str:
    """One named event, as Anthropic and the Responses API send them."""
    return f"event: {name}\ndata: {_json(payload)}\n\n"


DONE = data("[DONE]")

# Proxies must pass events through as they come, not buffer or cache them.
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def response(events):
    """A streaming HTTP response of already-framed SSE text."""
    from fastapi.responses import StreamingResponse

    return StreamingResponse(events, media_type="text/event-stream", headers=HEADERS)
