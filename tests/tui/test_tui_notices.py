"""Notices in the TUI: a marker in the status line at 80 columns, `!` lists them all,
and their text is shown as written, never read as markup."""

from __future__ import annotations

import pytest

from reader import format as fmt
from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.app import DebuggerApp
from tfdbg_tui.screens.help import help_text


@pytest.fixture(scope="module")
def noticed_logdir(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("notices")
    dump = write_nan_dump(logdir, finished=False)
    dump.writer.add_notice(
        fmt.NOTICE_XLA_UNTRACED,
        "[red]train_step[/] is compiled with XLA and its tensors are not traced",
        details={"function": "train_step"},
    )
    dump.writer.add_notice(
        fmt.NOTICE_TRACED_BEFORE_ENABLE,
        "eval_step was traced before enable_dump_debug_info",
        details={"function": "eval_step"},
    )
    dump.writer.add_notice(
        fmt.NOTICE_CIRCULAR_BUFFER, "circular buffer of 1,000", level=fmt.NOTICE_INFO
    )
    dump.close()
    return logdir


async def test_status_line_at_80_columns_counts_the_notices(noticed_logdir):
    async with hunted_app(noticed_logdir, (80, 24)) as (app, pilot):
        await wait_for(
            pilot,
            lambda: "⚠ 3 notices" in screen_text(app).splitlines()[0],
            what="the notices marker",
        )
        assert len(screen_text(app).splitlines()[0].rstrip()) <= 80


async def test_exclamation_mark_lists_every_notice_warnings_first(noticed_logdir):
    async with hunted_app(noticed_logdir, (80, 24)) as (app, pilot):
        await pilot.press("!")
        await wait_for(pilot, lambda: "Notices (3)" in screen_text(app), what="the list")
        text = screen_text(app)
        assert "[red]train_step[/] is compiled with XLA" in text  # not markup
        assert text.index("eval_step was traced") < text.index("circular buffer of 1,000")
        assert "function: train_step" in text
        await pilot.press("escape")
        await wait_for(pilot, lambda: "Notices (3)" not in screen_text(app), what="closed")


async def test_a_run_without_notices_shows_no_marker(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, pilot):
        await wait_for(pilot, lambda: "alerts" in screen_text(app).splitlines()[0], what="status")
        assert "notice" not in screen_text(app).splitlines()[0]


def test_the_key_is_in_the_help():
    assert "The writer's notices" in help_text(DebuggerApp.BINDINGS).plain
