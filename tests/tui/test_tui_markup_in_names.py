"""Rich markup and escapes in op names and source text are shown as typed (the
terminal sequences themselves: test_dump_text_shown_literally.py)."""

from __future__ import annotations

from tests.synthetic import write_nan_dump
from tests.tui.tui_helpers import hunted_app, screen_text, wait_for
from tfdbg_tui.models.source_view import highlight_source

INJECTED = "[red]Log[/red]\x1b[31m\x07"


async def test_markup_and_escapes_in_op_names_are_shown_literally(tmp_path):
    write_nan_dump(tmp_path, op_names={"log": INJECTED, "probs": "[bold]soft[/]"})
    async with hunted_app(tmp_path, (160, 40)) as (app, pilot):
        literal_name = "[red]Log[/red]\\x1b[31m\\x07:0"
        await wait_for(pilot, lambda: literal_name in screen_text(app), what="literal name")
        text = screen_text(app)
        assert "[bold]soft[/]:0" in text
        assert "\x1b" not in text and "\x07" not in text
        await pilot.press("e")  # the whole diagnosis quotes the names too
        await wait_for(pilot, lambda: "Evidence:" in screen_text(app), what="diagnosis")
        text = screen_text(app)
        assert "input `[bold]soft[/]:0`" in text
        assert "Log [red]Log[/red]\\x1b[31m\\x07:0, graph #9" in text
        assert "\x1b" not in text and "\x07" not in text


def test_source_text_is_escaped_and_never_markup():
    lines = highlight_source(("x = '[red]hi[/red]'  # \x1b[2J", "\tindented"), "a.py")
    assert lines[0].plain == "x = '[red]hi[/red]'  # \\x1b[2J"
    assert lines[1].plain == "        indented"
