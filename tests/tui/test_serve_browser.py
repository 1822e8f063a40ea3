"""`tfdbg-tui serve` in a real browser: headless Chromium opens the URL it printed and
reads what its page's terminal shows (tests/tui/headless_chromium.py).

Without Chromium these tests skip, saying so (`.ci/run` installs it with apt)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.program_runs import PROGRAMS, line_of
from tests.tui.headless_chromium import HeadlessChromium, Page, TerminalScreen, find_browser
from tests.tui.served_debugger import ServedDebugger, poll_until

pytest.importorskip("textual_serve", reason="the browser view needs the web extra (textual-serve)")
BROWSER = find_browser()
pytestmark = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium to drive (apt-get install chromium; .ci/run does)"
)

# How long the page may take to show what is waited for (a busy machine).
SCREEN_TIMEOUT_S = 60.0
# DevTools' modifier bit for Ctrl.
CTRL = 2


async def wait_for_screen(
    page: Page, shows: Callable[[TerminalScreen], bool], what: str, shots: Path
) -> TerminalScreen:
    """Poll the page's terminal until ``shows`` holds; fail with the last screen (and a
    screenshot in ``shots``) after a timeout."""
    deadline = time.monotonic() + SCREEN_TIMEOUT_S
    screen = None
    while True:
        screen = await page.terminal()
        if screen is not None and shows(screen):
            return screen
        if time.monotonic() > deadline:
            await page.screenshot(shots / "timeout.png")
            seen = "no terminal" if screen is None else screen.text
            raise AssertionError(f"{what} never came (screenshot in {shots}); the page:\n{seen}")
        await asyncio.sleep(0.1)


def marked_source_line(screen: TerminalScreen) -> str:
    """The Source Code pane's marked line (▶ LINE CODE), from the pane's column on."""
    for row in screen.rows:
        if "▶ " in row:
            marked = row[row.index("▶ ") :]
            if marked[2:].lstrip()[:1].isdigit():
                return marked
    return ""


async def test_the_page_lands_on_the_root_cause_takes_keys_and_clicks_and_ends_with_its_tab(
    pattern_dumps, tmp_path
):
    """A real dump (tests/programs/patterns.py's log_zero: `tf.math.log` of a zero):
    without a keystroke the page shows the root cause, the Log op, and its source line
    marked; the status line says it is the browser view; a click moves to another alert,
    Ctrl+Z says it is a terminal's only; closing the tab ends its app."""
    served = ServedDebugger(Path(pattern_dumps) / "log_zero")
    assert BROWSER is not None
    browser = HeadlessChromium(BROWSER, tmp_path / "profile")
    try:
        await browser.connect()
        page = await browser.open_page(served.url)
        screen = await wait_for_screen(
            page,
            lambda s: "tf.math.log(probs)" in marked_source_line(s),
            "the root cause's source line",
            tmp_path,
        )
        await page.screenshot(tmp_path / "landing.png")
        assert screen.rows[0].startswith(" browser view ")
        assert screen.rows[1].lstrip().startswith("log of ≤0")
        assert "● Log Log:0  in loss" in screen.text  # Graph Structure: the root cause op
        line = marked_source_line(screen)
        bug_line = line_of(PROGRAMS / "patterns.py", "# BUG log_zero")
        assert line.split()[1] == str(bug_line)
        assert "return -tf.reduce_sum(tf.math.log(probs))" in line
        assert f"Source Code patterns.py:{bug_line}" in screen.text
        apps = served.apps()
        assert len(apps) == 1

        # The mouse: a click on the alert of Neg selects it; every pane follows.
        column, row = screen.find("graph #5 Neg Neg:0")
        await page.click(screen, column + 9, row)
        await wait_for_screen(
            page, lambda s: "● Neg Neg:0" in s.text, "the clicked alert's op", tmp_path
        )
        # The keyboard: Ctrl+Z cannot suspend a browser's app to a shell; it says so.
        await page.press("z", "KeyZ", 90, modifiers=CTRL)
        await wait_for_screen(
            page,
            lambda s: "suspends to the shell in a terminal only" in s.text,
            "the notice that Ctrl+Z is a terminal's",
            tmp_path,
        )
        assert served.apps() == apps  # still the same app, not suspended

        await page.close()
        await poll_until(lambda: not served.apps(), "the app's end when its tab closed")
    finally:
        await browser.close()
        assert served.stop() == 0


async def test_a_page_opened_without_the_token_shows_no_app_and_is_logged(nan_logdir, tmp_path):
    served = ServedDebugger(nan_logdir)
    assert BROWSER is not None
    browser = HeadlessChromium(BROWSER, tmp_path / "profile")
    try:
        await browser.connect()
        page = await browser.open_page(served.base + "/")
        deadline = time.monotonic() + SCREEN_TIMEOUT_S
        while "token" not in await page.body_text():
            assert time.monotonic() < deadline, "the refusal never showed"
            await asyncio.sleep(0.1)
        assert (await page.body_text()).strip() == (
            "tfdbg-tui serve: this page needs the token of the URL it printed"
        )
        assert await page.terminal() is None
        served.poll(lambda: any(" refused " in line for line in served.stderr), "the log")
        assert served.stderr[0] == "tfdbg-tui serve: refused GET / from 127.0.0.1: no token\n"
        assert not served.apps()
        await page.close()
    finally:
        await browser.close()
        assert served.stop() == 0
