"""The pane registry (`tfdbg_tui.panes.registry`) is the one list of the debugger's
panes: keys 1 to N in order, each pane laid out once, each sized by app.tcss, its
palette commands bound to its keys, and docs/keys.md naming each."""

from __future__ import annotations

import re
from pathlib import Path

import tfdbg_tui
from tests.tui.tui_helpers import hunted_app
from tfdbg_tui.panes.registry import COLUMNS, LIST_PANES, PANES
from tfdbg_tui.screens.debugger import DebuggerScreen
from tfdbg_tui.screens.help import help_text
from tfdbg_tui.widgets.line_list import LineList
from tfdbg_tui.widgets.pane import Pane

KEYS_DOC = Path(tfdbg_tui.__file__).resolve().parents[1] / "docs" / "keys.md"


def test_the_panes_keys_count_from_one_in_order():
    assert [pane.SECTION.key for pane in PANES] == [str(n) for n in range(1, len(PANES) + 1)]
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
    assert f"Every list ({', '.join(pane.SECTION.name for pane in LIST_PANES)})" in text


def test_every_palette_command_of_a_pane_is_bound_to_one_of_its_keys():
    """The palette shows each pane command with its key (`Pane.binding_of`), and runs
    the main widget's action."""
    for pane in PANES:
        for command in pane.COMMANDS:
            assert pane.binding_of(command.action).action == command.action
            assert callable(getattr(pane.CONTENT, f"action_{command.action}"))


def test_the_list_panes_are_the_panes_with_a_line_list():
    assert LIST_PANES and all(issubclass(pane.CONTENT, LineList) for pane in LIST_PANES)
    others = [pane for pane in PANES if pane not in LIST_PANES]
    assert others and not any(issubclass(pane.CONTENT, LineList) for pane in others)


def test_docs_keys_md_names_every_pane():
    """docs/keys.md, the user's list of keys, is held to the registry: its focus line
    names every pane by its key, every pane has a section "## N Name", and "Every list"
    names each pane that moves as a list."""
    text = KEYS_DOC.read_text(encoding="utf-8")
    focus = next(line for line in text.splitlines() if "| focus a pane: " in line)
    assert focus.startswith(f"| `{PANES[0].SECTION.key}` … `{PANES[-1].SECTION.key}` |")
    assert ", ".join(pane.TITLE for pane in PANES) in focus
    sections = re.findall(r"^## (\d+ .+)$", text, flags=re.MULTILINE)
    assert sections == [pane.TITLE for pane in PANES]
    lists = text.split("## Every list\n", 1)[1].strip().split("\n\n", 1)[0]
    for pane in LIST_PANES:
        assert pane.SECTION.name in lists, pane.SECTION.name


async def test_the_command_palette_offers_each_pane_s_commands_with_its_key(nan_logdir):
    async with hunted_app(nan_logdir, (80, 24)) as (app, _pilot):
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
    for pane in PANES:
        assert commands[f"Focus {pane.SECTION.name}"] == f"Key {pane.SECTION.key}"
    assert commands["Search op name or type"] == "Graph Execution: /"
    assert commands["Hide/show library frames"] == "Stack Trace: l"
    for pane in PANES:
        for command in pane.COMMANDS:
            assert commands[command.title].startswith(f"{pane.SECTION.name}: ")
