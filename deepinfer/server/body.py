"""A request body's bytes -> a JSON object every later stage can take as it is, or a 400.

Python's `json` accepts what RFC 8259 does not (NaN, Infinity, numbers that overflow to
infinity, strings holding lone UTF-16 surrogates) and recurses once per nesting level.
Each of those would surface later as a 500 (a tokenizer refusing the text, a response
that cannot be encoded, a RecursionError in a validator), so they are refused here, with
the JSON path of the first offending value. The walk is iterative: nesting within the
limit never costs recursion depth, and anything deeper is refused before any stage
recurses into it. Pure functions; the routes run them off the event loop.
"""

from __future__ import annotations

import json
import math
from typing import Any

from deepinfer.server.errors import APIError, bad_request

MAX_DEPTH = 128  # JSON Schemas nest a few dozen levels at most; anything deeper is refused


def parse_json_object(raw: bytes) -> dict:
    """The body as a dict, or an APIError naming what is wrong and where."""
    try:
        body = json.loads(raw)
    except RecursionError:
        raise _too_deep(()) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}", code="invalid_json") from None
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object", code="invalid_json")
    check_json_values(body)
    return body


def check_json_values(value: Any, max_depth: int = MAX_DEPTH) -> None:
    """Refuse non-finite numbers, unencodable strings and nesting past `max_depth`."""
    stack: list[tuple[Any, tuple, int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= max_depth:
                raise _too_deep(path)
            for key, child in item.items():
                if not _encodable(key):
                    raise _surrogate(field_path(path + (key,)), "the key")
                stack.append((child, path + (key,), depth + 1))
        elif isinstance(item, list):
            if depth >= max_depth:
                raise _too_deep(path)
            stack.extend((child, path + (i,), depth + 1) for i, child in enumerate(item))
        elif isinstance(item, str):
            if not _encodable(item):
                raise _surrogate(field_path(path), "the string")
        elif isinstance(item, float) and not math.isfinite(item):
            where = field_path(path)
            raise bad_request(f"'{where}': {item!r} is not a JSON number (NaN, Infinity and numbers too "
                              "large for a double are not valid JSON)", param=where, code="invalid_json")


def field_path(path: tuple) -> str:
    """('messages', 0, 'content') -> 'messages[0].content', the style of the protocol docs."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:  # a key may itself hold a surrogate: the path must stay printable
            key = part.encode("utf-8", "backslashreplace").decode("utf-8")
            out += f".{key}" if out else key
    return out or "(body)"


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(where: str, what: str) -> APIError:
    return bad_request(f"'{where}': {what} holds a lone UTF-16 surrogate (e.g. \\ud800), which is no "
                       "Unicode character; send valid UTF-8 text", param=where, code="invalid_json")


def _too_deep(path: tuple) -> APIError:
    where = field_path(path[:1])  # the top-level field: the full path would be as deep as the value
    return bad_request(f"'{where}': the request nests JSON deeper than {MAX_DEPTH} levels",
                       param=where, code="invalid_json")
