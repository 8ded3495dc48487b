"""What every HTTP request must pass before a route sees it (an ASGI middleware).

- A body larger than `max_body_bytes` is a 413, decided from Content-Length or, for
  chunked bodies, as soon as the bytes received pass the limit: nothing is parsed.
- Without an API key the server trusts whoever can reach it, so it must not be reachable
  from a web page the user happens to open: a `Host` that is not a loopback name (or an
  `allowed_hosts` entry) is refused (DNS rebinding points a public name at 127.0.0.1), and so
  is a body whose content type is not JSON (text/plain and form bodies are what a page can
  send without a CORS preflight).

Refusals are rendered in the protocol of the path, like every other error.
"""

from __future__ import annotations

from dataclasses import dataclass

from deepinfer.server.errors import APIError, error_response, protocol_of

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
DEFAULT_MAX_BODY_BYTES = 4 << 20


@dataclass(frozen=True)
class GuardConfig:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    trust_any_origin: bool = False  # True with an API key: the key, not the origin, is the check
    allowed_hosts: frozenset[str] = frozenset()


def host_name(host_header: str) -> str:
    """'Example.com:8000' -> 'example.com', '[::1]:8000' -> '[::1]'."""
    host = host_header.strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def is_json_type(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class RequestGuard:
    def __init__(self, app, config: GuardConfig) -> None:
        self.app = app
        self.config = config

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = self._refusal(scope, headers)
        if problem is not None:
            return await self._refuse(problem, scope, receive, send)
        limit = self.config.max_body_bytes
        received = 0

        async def limited_receive():
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # the app's APIError handler answers it, in the route's protocol
                    raise self._too_large()
            return message

        started = False

        async def tracking_send(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except APIError as exc:  # an app without APIError handling: answer it here if still possible
            if started:
                raise
            await self._refuse(exc, scope, receive, send)

    def _refusal(self, scope, headers: dict[str, str]) -> APIError | None:
        length = headers.get("content-length")
        if length is not None and length.strip().isdigit() and int(length) > self.config.max_body_bytes:
            return self._too_large()
        if self.config.trust_any_origin:
            return None
        host = host_name(headers.get("host", ""))
        if host not in LOOPBACK_NAMES and host not in self.config.allowed_hosts:
            return APIError(403, f"Host {headers.get('host', '')!r} is not allowed: without an API key this "
                                 "server answers only requests addressed to a loopback name (localhost, "
                                 "127.0.0.1, [::1]); start it with --api-key, or list the name with "
                                 "--allowed-hosts", code="host_not_allowed")
        has_body = scope.get("method") in ("POST", "PUT", "PATCH")
        if has_body and not is_json_type(headers.get("content-type", "")):
            return APIError(415, f"the request body must be JSON (Content-Type: application/json), not "
                                 f"{headers.get('content-type') or 'untyped'}",
                            code="unsupported_media_type")
        return None

    def _too_large(self) -> APIError:
        return APIError(413, f"the request body is larger than {self.config.max_body_bytes} bytes, the limit "
                             "of this server (--max-body-bytes)", code="request_too_large")

    @staticmethod
    async def _refuse(error: APIError, scope, receive, send) -> None:
        response = error_response(error, protocol_of(scope["path"]))
        await response(scope, receive, send)
