"""The pane registry (`tfdbg_tui.panes.registry`) is the one list of the debugger's
panes: keys 1 to 6 in order, each pane laid out once, each sized by app.tcss."""

from __future__ import annotations

from pathlib import Path

import tfdbg_tui
from tfdbg_tui.panes.registry import COLUMNS, PANES
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.screens.help import help_text
from tfdbg_tui.widgets.pane import Pane


def test_the_panes_keys_are_one_to_six_in_order():
    assert [pane.SECTION.key for pane in PANES] == ["1", "2", "3", "4", "5", "6"]
    assert len({pane.CONTENT_ID for pane in PANES}) == len(PANES)


def test_every_pane_is_laid_out_once_and_no_other():
    laid_out = [pane for column in COLUMNS for pane in column]
    assert sorted(laid_out, key=PANES.index) == list(PANES)
    assert set(Pane.__subclasses__()) == set(PANES)


def test_app_tcss_sizes_every_pane():
    styles = (Path(tfdbg_tui.__file__).parent / "app.tcss").read_text(encoding="utf-8")
    assert all(f"#{pane.CONTENT_ID}-pane " in styles for pane in PANES)


def test_the_screen_keys_and_the_help_name_every_pane():
    keys = {binding.key: binding.action for binding in DebuggerScreen.SCREEN_KEYS}
    text = help_text([]).plain
    for pane in PANES:
        assert keys[pane.SECTION.key] == f"focus_pane('{pane.CONTENT_ID}')"
        assert pane.TITLE in text
