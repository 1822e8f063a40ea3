"""`PrivateServer`: the debugger behind a web page, for `tfdbg-tui serve`, that only the
holder of its token can open. textual-serve's page and websocket (each tab runs the
app's own command line, `app_main.app_arguments`, in a process that ends with the
tab) behind a token that every request carries in the query or the page's cookie,
compared in constant time; a request without it is refused (403) and logged in one
line.

textual-serve (the `web` extra) does the serving: its page draws a terminal with
xterm.js, and each websocket the page opens starts the app's command line in a process
of its own, which ends when the websocket closes. It has no access control: here every
request (the page, its static files, the websocket, a download) must carry the
server's random token, in the URL's query (``?token=...``, the URL `serve` prints) or
in the cookie the page's response sets. A request without it gets no page and no app,
and is logged in one line.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import signal
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server

from tfdbg_tui.text.literal import literal

log = logging.getLogger("tfdbg_tui.serve")

TOKEN_PARAMETER = "token"
# The cookie that carries the token for the page's own requests (its scripts, its
# websocket, downloads). Browsers keep cookies per host, not per port: the name holds
# the port the browser sees, so that two servers forwarded to one laptop do not
# overwrite each other's.
COOKIE_PREFIX = "tfdbg-tui-token-"
# How long a closing server waits for each tab's app to quit.
SHUTDOWN_TIMEOUT_S = 10.0
# The page's terminal font size, in CSS pixels (the browser's zoom scales it).
FONT_SIZE = 16

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class CannotListen(Exception):
    """The host and port cannot be listened on (a port in use, a host that is not
    this machine's, a name that does not resolve); the message says why."""


class PrivateServer(Server):
    """textual-serve's server with a token on every request.

    Args:
        command: The shell command line of the app each websocket runs (quoted).
        token: The secret every request must carry.
        title: The page's title.
    """

    def __init__(self, command: str, token: str, title: str = "tfdbg-tui") -> None:
        super().__init__(command, title=title)
        self._token = token.encode()

    def _has_token(self, given: str | None) -> bool:
        """Whether ``given`` is the token, compared in constant time."""
        if given is None:
            return False
        return hmac.compare_digest(given.encode("utf-8", "replace"), self._token)

    async def _make_app(self) -> web.Application:
        # textual-serve's routes (`/`, `/ws`, `/static`, `/download/{key}`) behind the
        # token. `_make_app` is textual-serve's own hook for its aiohttp application
        # (pinned in the `web` extra).
        app = await super()._make_app()
        app.middlewares.append(self._require_token)
        return app

    @web.middleware
    async def _require_token(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        cookie = f"{COOKIE_PREFIX}{request.url.port}"
        in_query = request.query.get(TOKEN_PARAMETER)
        given = in_query if in_query is not None else request.cookies.get(cookie)
        if not self._has_token(given):
            why = "no token" if given is None else "a wrong token"
            log.warning(
                "refused %s %s from %s: %s",
                request.method,
                literal(request.rel_url.path),
                literal(request.remote or "?"),
                why,
            )
            return web.Response(
                status=403,
                text="tfdbg-tui serve: this page needs the token of the URL it printed\n",
            )
        response = await handler(request)
        if in_query is not None and not response.prepared:
            response.set_cookie(cookie, in_query, httponly=True, samesite="Strict")
        return response

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """The page, its URLs on the host and port the browser used (a forwarded port
        on a laptop, this machine's name), not the ones the server listens on."""
        origin = f"{request.scheme}://{request.host}"
        websocket = "wss" if request.scheme == "https" else "ws"
        return {
            "font_size": FONT_SIZE,
            "app_websocket_url": f"{websocket}://{request.host}/ws",
            "config": {"static": {"url": f"{origin}/static/"}},
            "application": {"name": self.title},
        }

    async def on_startup(self, app: web.Application) -> None:
        """Says nothing: `serve` prints the URL once the port is bound."""

    async def run(self, host: str, port: int, listening: Callable[[int], None]) -> None:
        """Listen on ``host``:``port`` (0: a free port), call ``listening`` with the
        port, and serve until SIGINT or SIGTERM; then each tab's app is told to quit.

        Raises:
            CannotListen: The address cannot be listened on.
        """
        runner = web.AppRunner(await self._make_app(), access_log=None)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port, shutdown_timeout=SHUTDOWN_TIMEOUT_S)
            try:
                await site.start()
            except OSError as error:
                raise CannotListen(_reason(error)) from None
            listening(runner.addresses[0][1])
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            await stop.wait()
        finally:
            await runner.cleanup()


def _reason(error: OSError) -> str:
    """Why an address cannot be listened on, in a few words ("address already in
    use", "name or service not known")."""
    import os
    import socket

    if isinstance(error, socket.gaierror):
        return str(error.strerror or error).lower()
    if error.errno is not None:
        return os.strerror(error.errno).lower()
    return str(error)
