"""The ASGI app: routes, API-key auth, protocol-shaped errors, request metrics.

`create_app(state)` wires a ready `ServerState` (engine, tokenizer, compiler
...) into FastAPI; `backend.py` builds that state from a model path. Errors
are rendered in the protocol of the route (Anthropic's shape under
/v1/messages, OpenAI's elsewhere).
"""

from __future__ import annotations

import hmac
import logging
import time

from fastapi import Depends, FastAPI, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from deepinfer.server.errors import APIError, error_response, protocol_of
from deepinfer.server.guard import GuardConfig, RequestGuard
from deepinfer.server.metrics import CONTENT_TYPE
from deepinfer.server.routes_anthropic import router as anthropic_router
from deepinfer.server.routes_openai import router as openai_router
from deepinfer.server.routes_responses import router as responses_router
from deepinfer.server.state import ServerState, get_state

log = logging.getLogger("deepinfer.server")


async def require_api_key(request: Request) -> None:
    """Every route but /health: `Authorization: Bearer KEY` or Anthropic's `x-api-key: KEY`."""
    expected = get_state(request).config.api_key
    if expected is None:
        return
    auth = request.headers.get("authorization", "")
    given = auth[7:].strip() if auth.lower().startswith("bearer ") else request.headers.get("x-api-key")
    if given is None or not hmac.compare_digest(given.encode(), expected.encode()):
        raise APIError(401, "missing or invalid API key: send 'Authorization: Bearer <key>' "
                            "(or 'x-api-key: <key>')", code="invalid_api_key")


ROUTES = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/messages", "/v1/models",
                    "/health", "/metrics"})


class MetricsMiddleware:
    """Counts requests by route and final status; tracks requests in flight.

    Unknown paths share the label "other", so a scanner cannot grow the label set."""

    def __init__(self, app, state: ServerState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = {"code": 500}

        async def send_wrapper(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        metrics = self.state.metrics
        metrics.in_flight.inc()
        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            metrics.in_flight.dec()
            path = scope["path"]
            metrics.record_request(path if path in ROUTES else "other", status["code"])


def create_app(state: ServerState) -> FastAPI:
    app = FastAPI(title="deepinfer", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.deepinfer = state
    config = state.config
    # The guard runs inside the metrics middleware, so refused requests are counted too.
    app.add_middleware(RequestGuard, config=GuardConfig(config.max_body_bytes, config.api_key is not None,
                                                        frozenset(h.lower() for h in config.allowed_hosts)))
    app.add_middleware(MetricsMiddleware, state=state)

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError):
        return error_response(exc, protocol_of(request.url.path))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        return error_response(APIError(exc.status_code, str(exc.detail)), protocol_of(request.url.path))

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception):
        log.exception("internal error on %s", request.url.path)
        err = APIError(500, f"internal server error: {type(exc).__name__}: {exc}")
        return error_response(err, protocol_of(request.url.path))

    @app.get("/health")
    async def health():
        return {"status": "ok"}

    secured = [Depends(require_api_key)]

    def model_card(name: str) -> dict:
        return {"id": name, "object": "model", "created": int(time.time()), "owned_by": "deepinfer"}

    @app.get("/v1/models", dependencies=secured)
    async def models(request: Request):
        return {"object": "list", "data": [model_card(get_state(request).config.model_name)]}

    @app.get("/v1/models/{model_id:path}", dependencies=secured)
    async def model(model_id: str, request: Request):
        name = get_state(request).config.model_name
        if model_id != name:
            raise APIError(404, f"model '{model_id}' is not served here (this server serves '{name}')",
                           param="model", code="model_not_found")
        return model_card(name)

    @app.get("/metrics", dependencies=secured)
    async def metrics(request: Request):
        return Response(get_state(request).metrics.render(), media_type=CONTENT_TYPE)

    for router in (openai_router, responses_router, anthropic_router):
        app.include_router(router, dependencies=secured)
    return app
