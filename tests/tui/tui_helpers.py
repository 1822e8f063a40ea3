"""Helpers for Pilot tests: read the screen, wait for conditions (never sleep)."""

from __future__ import annotations

import time
from contextlib import asynccontextmanager

import reader
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.screens.debugger import DebuggerScreen

# How long a condition may take to come true: generous, as the box is shared.
WAIT_TIMEOUT_S = 30.0


def screen_strips(app) -> list:
    """The screen's rows as Textual strips (styled segments), rendered now.

    The one place the tests reach into Textual's private compositor: Textual has no
    public way to read the screen as text.
    """
    return app.screen._compositor.render_strips()


def screen_text(app) -> str:
    """What the terminal shows now, as plain text, one line per row."""
    return "\n".join(strip.text for strip in screen_strips(app))


async def wait_for(pilot, condition, timeout: float = WAIT_TIMEOUT_S, what: str = "") -> None:
    """Let the app run until `condition()` is true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out waiting for {what or condition}:\n{screen_text(pilot.app)}"
            )
        await pilot.pause(0.02)


async def wait_for_hunt(pilot) -> None:
    """Wait until the app has opened the dump and the hunt has filled the panes."""
    await wait_for(
        pilot,
        lambda: (
            getattr(pilot.app.screen, "root_cause", None) is not None
            and pilot.app.screen.query_one("#source-code").view is not None
        ),
        what="the hunt on open",
    )


def make_app(logdir, **kwargs) -> DebuggerApp:
    return DebuggerApp(str(logdir), reader.list_runs(logdir), **kwargs)


@asynccontextmanager
async def hunted_app(logdir, size: tuple[int, int] = (80, 24), **kwargs):
    """Run the app on `logdir` at `size` until the hunt filled the panes; yields
    (app, pilot)."""
    app = make_app(logdir, **kwargs)
    async with app.run_test(size=size) as pilot:
        await wait_for_hunt(pilot)
        yield app, pilot


async def wait_for_workers(pilot) -> None:
    """Wait until no worker is pending or running (cancelled ones count as done)."""
    from textual.worker import WorkerState

    def idle() -> bool:
        return not any(
            worker.state in (WorkerState.PENDING, WorkerState.RUNNING)
            for worker in pilot.app.workers
        )

    await wait_for(pilot, idle, what="the workers to finish")
    await pilot.pause()


def debugger_screen(app) -> DebuggerScreen:
    """The app's screen, which the test expects to be the debugger's."""
    screen = app.screen
    assert isinstance(screen, DebuggerScreen), screen
    return screen


def run_picker(app) -> RunPickerDialog:
    """The app's screen, which the test expects to be the run picker."""
    screen = app.screen
    assert isinstance(screen, RunPickerDialog), screen
    return screen
