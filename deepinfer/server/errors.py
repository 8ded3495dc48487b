"""HTTP errors and their wire shapes, one per protocol family.

An `APIError` carries an HTTP status, a machine-readable type, a message that
names the offending field (and JSON pointer or grammar line for constraint
errors) and the request parameter it concerns. Routes raise it; `app.py`
renders it in the protocol of the route that failed. Knows nothing about the
engine.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError
from starlette.responses import JSONResponse

Protocol = Literal["openai", "anthropic"]

# OpenAI error types by status; Anthropic uses its own names for the same statuses.
_OPENAI_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                 404: "not_found_error", 413: "invalid_request_error", 415: "invalid_request_error",
                 429: "rate_limit_error", 500: "server_error", 503: "server_error"}
_ANTHROPIC_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 413: "request_too_large", 415: "invalid_request_error",
                    429: "rate_limit_error", 500: "api_error", 503: "overloaded_error"}


def protocol_of(path: str) -> Protocol:
    """Anthropic's error shape under /v1/messages, OpenAI's elsewhere."""
    return "anthropic" if path.startswith("/v1/messages") else "openai"


@dataclass
class APIError(Exception):
    """An error answered to the client instead of a completion."""

    status: int
    message: str
    param: str | None = None
    code: str | None = None

    def __str__(self) -> str:
        return self.message

    def body(self, protocol: Protocol) -> dict:
        """The JSON error object in the given protocol's shape."""
        if protocol == "anthropic":
            return {"type": "error",
                    "error": {"type": _ANTHROPIC_TYPES.get(self.status, "api_error"),
                              "message": self.message}}
        return {"error": {"message": self.message,
                          "type": _OPENAI_TYPES.get(self.status, "server_error"),
                          "param": self.param, "code": self.code}}


class SafeJSONResponse(JSONResponse):
    """JSON with non-ASCII escaped: a message quoting the client's input stays encodable even
    when that input held a lone surrogate (an unencodable body would drop the connection)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def error_response(error: APIError, protocol: Protocol) -> JSONResponse:
    return SafeJSONResponse(error.body(protocol), status_code=error.status)


def bad_request(message: str, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def from_validation_error(exc: ValidationError) -> APIError:
    """A pydantic error as a 400 naming each bad field by its dotted path."""
    problems = []
    first_param = None
    for err in exc.errors()[:5]:
        path = ".".join(str(p) for p in err["loc"]) or "(body)"
        first_param = first_param or path
        if err["type"] == "extra_forbidden":
            problems.append(f"unknown field '{path}' (not supported; refusing rather than ignoring it)")
        elif err["type"] == "missing":
            problems.append(f"missing required field '{path}'")
        else:
            problems.append(f"'{path}': {err['msg']}")
    return bad_request("invalid request: " + "; ".join(problems), param=first_param,
                       code="invalid_request_body")
