"""`tfdbg-tui BAD --compare GOOD --name-a good --name-b bad` (what `run --ab` opens in
a terminal) on synthetic runs: every word of the comparison names the runs so, not "A"
and "B", which under `run --ab` are the directories the runs were recorded into."""

from __future__ import annotations

from collections.abc import Sequence

from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run
from tests.tui.tui_helpers import make_app, screen_text, wait_for
from tfdbg_tui.panes.graph_execution import GraphExecutionList


def _run(logdir, steps: Sequence[Sequence[Sequence[float]]]) -> str:
    run = make_run(logdir)
    for rows in steps:
        add_step(run, rows)
    run.writer.close()
    return run.path


async def test_the_comparison_calls_the_runs_by_the_names_given(tmp_path):
    """The bad run has the -inf at step 1, and a step 2 the good run never reached:
    the status line, Graph Execution's title and header, the rows only the bad run
    has and the landing notice all say "good" and "bad"."""
    finite = [FINITE, FINITE, FINITE]
    good = _run(tmp_path / "B", [finite, finite])
    _run(tmp_path / "A", [finite, [FINITE, NEG_INF, NAN], finite])
    app = make_app(tmp_path / "A", compare=good, compare_names=("good", "bad"))
    async with app.run_test(size=(120, 30), notifications=True) as pilot:
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.comparison is not None, what="the comparison")
        await wait_for(
            pilot, lambda: "first divergence: Log" in screen_text(app), what="the landing notice"
        )
        text = screen_text(app)
        notice = " ".join(line.split("▌")[-1].strip() for line in text.splitlines() if "▌" in line)
        assert "▌ vs good" in text and "non-finite in bad, finite in good." in notice
        assert " vs good: " in text.splitlines()[0]
        assert "vs good: " in text and "good #" in text
        assert "only in bad" in text
        assert " vs A" not in text and "only in B" not in text and "A #" not in text
