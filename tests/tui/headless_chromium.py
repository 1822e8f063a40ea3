"""Headless Chromium driven over the DevTools protocol, for the browser view's tests:
open a page, read the rows of the terminal it draws, take a screenshot, close it.

The page of `tfdbg-tui serve` draws the app with xterm.js on a canvas, so its DOM holds
no text; what it shows is read from xterm's own screen buffer (the cells it paints),
found on the page's heap (`Runtime.queryObjects`) as the object that holds the
terminal and the websocket.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# How long Chromium may take to start and say where its DevTools listen.
START_TIMEOUT_S = 30.0
COMMAND_TIMEOUT_S = 30.0

# Run on the page's heap array: the first xterm.js terminal that talks to a websocket
# (textual-serve's terminal object): its rows, and where its cells are on the page; or
# null.
READ_TERMINAL = """function () {
  for (const holder of this) {
    const terminal = holder && holder.terminal;
    if (!terminal || !terminal.buffer || holder.websocket_url === undefined) continue;
    const buffer = terminal.buffer.active, rows = [];
    for (let y = 0; y < terminal.rows; y++) {
      const line = buffer.getLine(buffer.viewportY + y);
      rows.push(line ? line.translateToString(true) : "");
    }
    const box = terminal.element.querySelector(".xterm-screen").getBoundingClientRect();
    return {rows: rows, columns: terminal.cols, left: box.left, top: box.top,
            width: box.width, height: box.height};
  }
  return null;
}"""


def find_browser() -> str | None:
    """The path of an installed Chromium, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path is not None:
            return path
    return None


class DevToolsError(AssertionError):
    """A DevTools command failed (its error in the message)."""


class HeadlessChromium:
    """One headless Chromium with a profile of its own under ``profile``.

    Every host name but the loopback's resolves to nothing: a page's requests outside
    this machine (the fonts textual-serve's page asks for) fail at once instead of
    waiting on a network.
    """

    def __init__(self, browser: str, profile: Path) -> None:
        self.process = subprocess.Popen(
            [
                browser,
                "--headless",
                "--no-sandbox",  # CI runs as root
                "--disable-gpu",
                "--no-first-run",
                "--window-size=1280,800",
                "--remote-debugging-port=0",
                f"--user-data-dir={profile}",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._ids = itertools.count(1)
        self._session: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse[bool] | None = None

    async def connect(self) -> None:
        """Wait for the DevTools endpoint Chromium prints, and connect to it."""
        endpoint = await asyncio.wait_for(
            asyncio.to_thread(self._devtools_endpoint), START_TIMEOUT_S
        )
        self._session = aiohttp.ClientSession()
        self._socket = await self._session.ws_connect(endpoint, max_msg_size=0)

    def _devtools_endpoint(self) -> str:
        assert self.process.stderr is not None
        lines = []
        for line in self.process.stderr:
            lines.append(line)
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            if found:
                return found.group(1)
        raise AssertionError(f"Chromium did not start: {''.join(lines)[-2000:]}")

    async def send(self, method: str, session: str | None = None, **params: Any) -> dict:
        """One DevTools command; its result (events in between are passed over)."""
        assert self._socket is not None
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        await self._socket.send_json(message)

        async def answer() -> dict:
            assert self._socket is not None
            while True:
                reply = await self._socket.receive_json()
                if reply.get("id") == number:
                    if "error" in reply:
                        raise DevToolsError(f"{method}: {reply['error']}")
                    return reply.get("result", {})

        return await asyncio.wait_for(answer(), COMMAND_TIMEOUT_S)

    async def open_page(self, url: str) -> Page:
        target = (await self.send("Target.createTarget", url=url))["targetId"]
        attached = await self.send("Target.attachToTarget", targetId=target, flatten=True)
        return Page(self, target, attached["sessionId"])

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
        self.process.kill()
        self.process.wait(timeout=30)
        if self.process.stderr is not None:
            self.process.stderr.close()


class Page:
    """A tab of `HeadlessChromium`."""

    def __init__(self, browser: HeadlessChromium, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session

    async def evaluate(self, expression: str) -> Any:
        result = await self.browser.send(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True
        )
        return result["result"].get("value")

    async def terminal(self) -> TerminalScreen | None:
        """What the page's terminal shows now, or None before it exists (or while the
        page is still loading)."""
        try:
            found = await self._read_terminal()
        except DevToolsError as error:
            if "context" in str(error):  # the page navigated between two commands
                return None
            raise
        return None if found is None else TerminalScreen(**found)

    async def _read_terminal(self) -> dict | None:
        send = self.browser.send
        prototype = await send("Runtime.evaluate", self.session, expression="Object.prototype")
        heap = await send(
            "Runtime.queryObjects", self.session, prototypeObjectId=prototype["result"]["objectId"]
        )
        heap_id = heap["objects"]["objectId"]
        try:
            rows = await send(
                "Runtime.callFunctionOn",
                self.session,
                objectId=heap_id,
                functionDeclaration=READ_TERMINAL,
                returnByValue=True,
            )
        finally:
            await send("Runtime.releaseObject", self.session, objectId=heap_id)
        return rows["result"].get("value")

    async def click(self, screen: TerminalScreen, column: int, row: int) -> None:
        """Click the middle of a cell of the terminal, as a mouse does."""
        x, y = screen.cell_centre(column, row)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.browser.send(
                "Input.dispatchMouseEvent",
                self.session,
                type=kind,
                x=x,
                y=y,
                button="none" if kind == "mouseMoved" else "left",
                clickCount=0 if kind == "mouseMoved" else 1,
            )

    async def press(self, key: str, code: str, key_code: int, modifiers: int = 0) -> None:
        """Press and release a key (DevTools' ``modifiers``: 2 is Ctrl)."""
        for kind in ("rawKeyDown", "keyUp"):
            await self.browser.send(
                "Input.dispatchKeyEvent",
                self.session,
                type=kind,
                key=key,
                code=code,
                windowsVirtualKeyCode=key_code,
                modifiers=modifiers,
            )

    async def body_text(self) -> str:
        return await self.evaluate("document.body ? document.body.innerText : ''") or ""

    async def screenshot(self, path: Path) -> None:
        shot = await self.browser.send("Page.captureScreenshot", self.session, format="png")
        path.write_bytes(base64.b64decode(shot["data"]))

    async def close(self) -> None:
        await self.browser.send("Target.closeTarget", targetId=self.target)


@dataclass(frozen=True)
class TerminalScreen:
    """The rows of the page's terminal, and where on the page its cells are."""

    rows: list[str]
    columns: int
    left: float
    top: float
    width: float
    height: float

    @property
    def text(self) -> str:
        return "\n".join(self.rows)

    def find(self, text: str) -> tuple[int, int]:
        """The column and row where ``text`` first appears."""
        for row, line in enumerate(self.rows):
            if text in line:
                return line.index(text), row
        raise AssertionError(f"{text!r} is not on the screen:\n{self.text}")

    def cell_centre(self, column: int, row: int) -> tuple[float, float]:
        return (
            self.left + (column + 0.5) * self.width / self.columns,
            self.top + (row + 0.5) * self.height / len(self.rows),
        )
