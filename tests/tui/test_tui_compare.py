"""`tfdbg-tui B --compare A` on real TensorFlow run pairs (tests/programs/
diff_pair.py): Graph Execution shows A's summaries beside B's, the app lands on the
first divergence, F / d / D move between divergences, a run compared with itself says
there is none, `c` compares from inside the app, and 80x24 works."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import reader
from reader.analysis.compare.diff import align_runs
from tests.present import present
from tests.tui.tui_helpers import debugger_screen, make_app, run_picker, screen_text, wait_for
from tfdbg_tui.dialogs.prompt import PromptDialog
from tfdbg_tui.dialogs.run_picker import RunPickerDialog
from tfdbg_tui.exit_codes import EXIT_NO_DUMP
from tfdbg_tui.panes.graph_execution import GraphExecutionList

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "tests" / "programs" / "diff_pair.py"


@pytest.fixture(scope="session")
def run_pair(tmp_path_factory) -> Path:
    """diff_pair.py's base (float32) and float16 variants in FULL_HEALTH:
    ROOT/base and ROOT/float16, one run each."""
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("compare_pair")
    done = subprocess.run(
        [sys.executable, str(PROGRAM), str(root), "FULL_HEALTH", "base", "float16"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(
            os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO), CUDA_VISIBLE_DEVICES=""
        ),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root


@pytest.fixture(scope="session")
def alignment(run_pair):
    """`reader.analysis.compare.diff.align_runs(base, float16)`: what the app should show."""
    with reader.open_run(run_pair / "base") as a, reader.open_run(run_pair / "float16") as b:
        return align_runs(a, b)


def compare_app(b: Path, a: Path):
    return make_app(b, compare=str(a))


def compared(screen) -> bool:
    """Whether the debugger screen shows run A beside B."""
    comparison = getattr(screen, "comparison", None)
    return comparison is not None and comparison.shown is not None


async def wait_for_comparison(pilot) -> None:
    await wait_for(pilot, lambda: compared(pilot.app.screen), what="the comparison")


def row_of(app, trace_index: int) -> str:
    """The Graph Execution row of `trace_index`, as shown."""
    lines = screen_text(app).splitlines()
    return next(line for line in lines if line.lstrip().startswith(f"{trace_index} "))


async def test_compare_lands_on_the_first_divergence_with_a_beside_b(run_pair, alignment):
    """The float16 Sum overflows (+inf) where the float32 one is finite: the app opens
    on it, the row shows A's counterpart after a `≠`, the unmatched Casts say so."""
    first = alignment.diff.first_divergence
    assert (first.op_type, first.kind) == ("Sum", "graph")
    app = compare_app(run_pair / "float16", run_pair / "base")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for_comparison(pilot)
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(
            pilot,
            lambda: graph_list.selected_trace == first.b.index,
            what="the first divergence selected",
        )
        assert app.focused is graph_list
        await wait_for(
            pilot,
            lambda: "first divergence: Sum 'Sum:0'" in screen_text(app),
            what="the landing notice",
        )
        text = screen_text(app)
        status = text.splitlines()[0]
        a_id = reader.list_runs(run_pair / "base")[0].run_id
        assert " vs A: " in status and status.rstrip().endswith(a_id[-6:])
        assert f"vs A: {alignment.divergent.shape[0]} divergent" in text
        assert "A #" in text and "inf/NaN" in text
        sum_row = row_of(app, first.b.index)
        assert "Sum:0" in sum_row and f"≠ {first.a.index:>3}" in sum_row
        # Both runs' inf/NaN cells (4 and 0) are marked as differing; the sizes are not.
        diverged = graph_list.component_style("graph-execution--diverged")
        rendered = graph_list.render_row(graph_list.rows.row_of(first.b.index), 80)
        marked = [
            rendered.plain[span.start : span.end].strip()
            for span in rendered.spans
            if span.style == diverged
        ]
        assert marked == ["4", "≠", "0"]
        cast = next(i for i in range(first.b.index) if alignment.counterpart_of(i) is None)
        assert "only in B" in row_of(app, cast)


async def test_divergence_keys_move_between_divergences(run_pair, alignment):
    divergent = [int(i) for i in alignment.divergent]
    assert len(divergent) >= 3 and divergent[0] == alignment.first
    app = compare_app(run_pair / "float16", run_pair / "base")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for_comparison(pilot)
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(pilot, lambda: graph_list.selected_trace == divergent[0], what="landing")
        for expected in divergent[1:3]:
            await pilot.press("d")
            await wait_for(
                pilot,
                lambda e=expected: graph_list.selected_trace == e,
                what=f"next divergence #{expected}",
            )
        await pilot.press("D")
        await wait_for(
            pilot, lambda: graph_list.selected_trace == divergent[1], what="previous divergence"
        )
        await pilot.press("end", "d")
        await wait_for(
            pilot, lambda: "no later divergence" in screen_text(app), what="no later divergence"
        )
        # From another pane too: the keys work anywhere and focus Graph Execution.
        await pilot.press("1", "F")
        await wait_for(
            pilot, lambda: graph_list.selected_trace == divergent[0], what="first divergence"
        )
        assert app.focused is graph_list


async def test_a_run_compared_with_itself_has_no_divergence_and_says_so(run_pair):
    base = run_pair / "base"
    app = compare_app(base, base)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for_comparison(pilot)
        await wait_for(pilot, lambda: "no divergence: the" in screen_text(app), what="the notice")
        text = screen_text(app)
        assert "Graph Execution vs A: no divergence" in text and "≠" not in text
        assert "only in B" not in text
        await pilot.press("d")
        await wait_for(
            pilot, lambda: "no later divergence" in screen_text(app), what="no divergence to go to"
        )


async def test_compare_at_80_columns(run_pair, alignment):
    app = compare_app(run_pair / "float16", run_pair / "base")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_for_comparison(pilot)
        first = alignment.first
        await wait_for(
            pilot,
            lambda: app.screen.query_one(GraphExecutionList).selected_trace == first,
            what="landing",
        )
        lines = screen_text(app).splitlines()
        assert all(len(line) <= 80 for line in lines)
        assert " vs A: " in lines[0] and "FULL_HEALTH" in lines[0]
        header = next(line for line in lines if "# tensor" in line)
        assert "inf/NaN │ A # inf/NaN" in header
        sum_row = row_of(app, first)
        assert "Sum:0" in sum_row and "≠" in sum_row


async def test_c_compares_with_a_run_given_by_path(run_pair, alignment):
    """A logdir of one run: `c` asks for A's path, then lands as --compare does."""
    app = make_app(run_pair / "float16")
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await wait_for(
            pilot, lambda: getattr(app.screen, "root_cause", None) is not None, what="the hunt"
        )
        assert not compared(app.screen)
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptDialog), what="the prompt")
        await pilot.press(*str(run_pair / "nowhere"), "enter")
        await wait_for(
            pilot, lambda: "Could not compare" in screen_text(app), what="the error notice"
        )
        assert not compared(app.screen) and present(debugger_screen(app).comparison).path is None
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, PromptDialog), what="the prompt")
        await pilot.press(*str(run_pair / "base"), "enter")
        await wait_for_comparison(pilot)
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(
            pilot, lambda: graph_list.selected_trace == alignment.first, what="the first divergence"
        )
        assert " vs A: " in screen_text(app).splitlines()[0]


async def test_c_picks_another_run_of_the_logdir(run_pair, alignment, tmp_path):
    """A logdir of several runs: `c` lists the others in the run picker."""
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    for variant in ("base", "float16"):
        run = next((run_pair / variant).iterdir())
        (logdir / run.name).symlink_to(run, target_is_directory=True)
    app = make_app(logdir)  # opens the newest run: float16's, made after base's
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(
            pilot, lambda: getattr(app.screen, "root_cause", None) is not None, what="the hunt"
        )
        await pilot.press("c")
        await wait_for(
            pilot, lambda: isinstance(app.screen, RunPickerDialog), what="the run picker"
        )
        assert "Compare with which run" in screen_text(app)
        assert [run.run_id for run in run_picker(app).runs] == [
            reader.list_runs(run_pair / "base")[0].run_id
        ]
        await pilot.press("enter")
        await wait_for_comparison(pilot)
        graph_list = app.screen.query_one(GraphExecutionList)
        await wait_for(
            pilot, lambda: graph_list.selected_trace == alignment.first, what="the first divergence"
        )


def test_a_bad_compare_path_is_one_line_and_exit_status_3(run_pair, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfdbg_tui.cli",
            str(run_pair / "float16"),
            "--compare",
            str(tmp_path / "missing"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    assert done.returncode == EXIT_NO_DUMP and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tfdbg-tui: ") and "missing" in lines[0]
