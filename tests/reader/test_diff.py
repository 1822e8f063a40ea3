"""Comparing two runs (`reader.analysis.compare.diff`, `tfdbg-tui diff`) on real TensorFlow run
pairs: float32 against float16, a one-line change, a run against itself, modes that differ."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import reader
from reader.analysis.compare.diff import (
    COUNTS,
    EAGER,
    FINITENESS,
    GRAPH,
    STATS,
    VALUES,
    compare_runs,
)
from tests.present import present
from tfdbg_tui.commands.diff_report import main as diff_main
from tfdbg_tui.exit_codes import EXIT_NO_DUMP, EXIT_OK, EXIT_USAGE

PROGRAM = os.path.join(os.path.dirname(os.path.dirname(__file__)), "programs", "diff_pair.py")
REPO = str(Path(__file__).resolve().parents[2])
# (mode, variants) run by the fixture, one process per mode.
PAIRS = {
    "FULL_HEALTH": ("base", "float16", "scaled", "negated", "xla", "xla_float16"),
    "FULL_TENSOR": ("base", "scaled"),
    "CURT_HEALTH": ("float16",),
    "FULL_STATS": ("base", "scaled"),
}


def _line_of(marker: str) -> int:
    with open(PROGRAM, encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith(marker))


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    """tests/programs/diff_pair.py's variants, one logdir each: ROOT/MODE/VARIANT."""
    pytest.importorskip("tensorflow")
    root = tmp_path_factory.mktemp("diff_pairs")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    for mode, variants in PAIRS.items():
        done = subprocess.run(
            [sys.executable, PROGRAM, str(root / mode), mode, *variants],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return root


def _compare(a: Path, b: Path, **tolerance):
    with reader.open_run(str(a)) as run_a, reader.open_run(str(b)) as run_b:
        return compare_runs(run_a, run_b, **tolerance), run_a.num_traces


def test_float16_overflow_is_found_where_float32_stays_finite(runs):
    diff, traces = _compare(runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "float16")
    d = diff.first_divergence
    assert (d.kind, d.reason, d.op_type, d.graph_name, d.step) == (
        GRAPH,
        FINITENESS,
        "Sum",
        "step",
        0,
    )
    assert (d.a.summary.pos_inf, d.b.summary.pos_inf, d.b.summary.dtype) == (0, 4, "float16")
    assert (d.frame.path, d.frame.line) == (PROGRAM, _line_of("# SUM_LINE"))
    # The float16 version's three Casts per step have no counterpart; all else aligns.
    assert diff.unmatched_b == {"Cast": 9} and not diff.unmatched_a
    assert diff.aligned_graph == traces


def test_a_run_against_itself_does_not_diverge(runs):
    diff, traces = _compare(runs / "FULL_TENSOR" / "base", runs / "FULL_TENSOR" / "base")
    assert diff.first_divergence is None
    assert diff.aligned_graph == traces and diff.aligned_eager > 0
    assert not diff.unmatched_a and not diff.unmatched_b


def test_a_one_line_change_is_found_in_the_values(runs):
    """SCALE 1.0 -> 1.01: the first tensor that differs is that constant, on its line."""
    diff, _ = _compare(runs / "FULL_TENSOR" / "base", runs / "FULL_TENSOR" / "scaled")
    d = diff.first_divergence
    assert (d.reason, d.op_type, d.step) == (VALUES, "Const", 0)
    assert d.max_rel_error == pytest.approx(0.01, rel=1e-3)
    assert (d.frame.path, d.frame.line) == (PROGRAM, _line_of("# MUL_LINE"))
    # Within a 5% tolerance the runs agree (the squares differ by 1.01² - 1 = 2.01%).
    diff, _ = _compare(runs / "FULL_TENSOR" / "base", runs / "FULL_TENSOR" / "scaled", rtol=0.05)
    assert diff.first_divergence is None


def test_summaries_do_not_see_a_small_change_of_values(runs):
    """FULL_HEALTH counts signs and non-finite values: a 1% change leaves them equal."""
    diff, _ = _compare(runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "scaled")
    assert diff.first_divergence is None and diff.compared == "finiteness, then element counts"


def test_full_stats_sees_the_small_change_the_counts_do_not(runs):
    """SCALE 1.0 -> 1.01 in FULL_STATS: the constant's max differs by 1%, beyond the
    default relative tolerance; within 5% the runs agree."""
    diff, _ = _compare(runs / "FULL_STATS" / "base", runs / "FULL_STATS" / "scaled")
    d = diff.first_divergence
    assert (d.kind, d.reason, d.op_type, d.step) == (GRAPH, STATS, "Const", 0)
    assert d.detail.startswith("min 1 in A, 1.01 in B; max 1 in A, 1.01 in B")
    assert (d.frame.path, d.frame.line) == (PROGRAM, _line_of("# MUL_LINE"))
    assert diff.compared == "finiteness, then element counts, then min, max and mean"
    diff, _ = _compare(runs / "FULL_STATS" / "base", runs / "FULL_STATS" / "scaled", rtol=0.05)
    assert diff.first_divergence is None


def test_counts_that_differ_are_a_divergence_when_all_stays_finite(runs):
    """The same program fed -60 instead of 60: all finite, the signs differ from the
    eager `tf.fill` that made the input on, before the first step (a divergence of
    counts, not of finiteness)."""
    diff, _ = _compare(runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "negated")
    d = diff.first_divergence
    assert (d.kind, d.reason, d.op_type, d.op_name, d.step) == (EAGER, COUNTS, "Fill", None, None)
    assert "negative 0 in A, 64 in B" in d.detail and "positive 64 in A, 0 in B" in d.detail
    # A is the broken one: the divergence says so.
    diff, _ = _compare(runs / "FULL_HEALTH" / "float16", runs / "FULL_HEALTH" / "base")
    d = diff.first_divergence
    assert (d.reason, d.op_type) == (FINITENESS, "Sum") and "non-finite in A" in d.detail
    assert diff.unmatched_a == {"Cast": 9}


def test_xla_on_and_off(runs):
    """jit_compile=True against plain: every tensor aligns (XLA's traces keep the
    graph's op names) and agrees; in float16 under XLA the Sum still overflows."""
    diff, traces = _compare(runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "xla")
    assert diff.first_divergence is None and diff.aligned_graph == traces
    assert not diff.unmatched_a and not diff.unmatched_b
    diff, _ = _compare(runs / "FULL_HEALTH" / "xla", runs / "FULL_HEALTH" / "xla_float16")
    d = diff.first_divergence
    assert (d.reason, d.op_type, d.step) == (FINITENESS, "Sum", 0)
    assert (d.frame.path, d.frame.line) == (PROGRAM, _line_of("# SUM_LINE"))


def test_runs_in_different_modes_are_compared_on_what_both_record(runs):
    diff, _ = _compare(runs / "FULL_HEALTH" / "base", runs / "CURT_HEALTH" / "float16")
    d = diff.first_divergence
    assert (d.reason, d.op_type) == (FINITENESS, "Sum")
    assert d.b.summary.size is None  # CURT_HEALTH records only whether it went bad


# -- the command -----------------------------------------------------------------------------


def documented_diff_keys() -> list[str]:
    docs = (Path(REPO) / "docs" / "keys.md").read_text()
    section = docs.split("## `diff --json`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_json_has_the_documented_keys_and_the_source(runs, capsys):
    a, b = runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "float16"
    assert diff_main([str(a), str(b), "--json"]) == EXIT_OK
    out = json.loads(capsys.readouterr().out)
    assert list(out) == documented_diff_keys()
    assert (out["aligned"], out["unmatched_a"], out["unmatched_b"]) == (
        out["aligned_graph"] + out["aligned_eager"],
        0,
        9,
    )
    first = out["first_divergence"]
    assert (
        first["kind"],
        first["op_type"],
        first["op_name"],
        first["graph_name"],
        first["step"],
    ) == ("graph", "Sum", "Sum", "step", 0)
    assert first["b"]["pos_inf"] == 4 and first["a"]["pos_inf"] == 0
    assert first["source"] == {
        "file": PROGRAM,
        "line": _line_of("# SUM_LINE"),
        "function": "step",
        "expression": "tf.reduce_sum(tf.square(h), axis=1)",
    }


def test_human_output_names_the_op_and_marks_the_expression(runs, capsys):
    a, b = runs / "FULL_HEALTH" / "base", runs / "FULL_HEALTH" / "float16"
    assert diff_main([str(a), str(b)]) == EXIT_OK
    out = capsys.readouterr().out
    assert "First divergence: Sum 'Sum:0' in graph 'step' at step 0" in out
    assert "non-finite in B, finite in A" in out and "only in B: 9 (Cast 9)" in out
    assert "\\x" not in out  # no escaped control character: blank lines are printed
    source, carets = out.splitlines()[-2:]
    start = source.index("tf.reduce_sum")
    assert carets.index("^") == start and carets.count("^") == len(
        "tf.reduce_sum(tf.square(h), axis=1)"
    )


def test_no_divergence_is_said(runs, capsys):
    base = str(runs / "FULL_TENSOR" / "base")
    assert diff_main([base, base]) == EXIT_OK
    assert "No divergence" in capsys.readouterr().out


def test_bad_paths_and_tolerances_exit_with_one_line(runs, tmp_path, capsys):
    base = str(runs / "FULL_TENSOR" / "base")
    assert diff_main([base, str(tmp_path / "missing")]) == EXIT_NO_DUMP
    err = capsys.readouterr().err
    assert err.startswith("tfdbg-tui diff: ") and len(err.strip().splitlines()) == 1
    assert diff_main([base, base, "--rtol", "-1"]) == EXIT_USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_the_console_script_runs_diff(runs):
    base = str(runs / "FULL_TENSOR" / "base")
    done = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "diff", base, base, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PYTHONPATH=REPO),
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["first_divergence"] is None


# -- the alignment the TUI browses (`align_runs`) ------------------------------------------


def test_align_runs_maps_b_traces_to_a_and_lists_the_divergences(runs):
    from reader.analysis.compare.diff import align_runs

    with (
        reader.open_run(str(runs / "FULL_HEALTH" / "base")) as a,
        reader.open_run(str(runs / "FULL_HEALTH" / "float16")) as b,
    ):
        alignment = align_runs(a, b)
        assert alignment.diff == compare_runs(a, b)
        first = alignment.diff.first_divergence
        assert first is not None
        assert alignment.first == first.b.index
        assert alignment.counterpart_of(first.b.index) == first.a.index
        assert alignment.reason_of(first.b.index) == FINITENESS
        # Every B trace has a counterpart but the 9 Casts; each maps to an A trace of
        # the same op name.
        unmatched = [i for i in range(b.num_traces) if alignment.counterpart_of(i) is None]
        assert len(unmatched) == 9
        assert {b.op(present(b.traces(i, i + 1)[0].op_id)).op_type for i in unmatched} == {"Cast"}
        for i in range(b.num_traces):
            j = alignment.counterpart_of(i)
            if j is not None:
                assert (
                    a.op(present(a.traces(j, j + 1)[0].op_id)).name
                    == b.op(present(b.traces(i, i + 1)[0].op_id)).name
                )
        # The divergences: the overflowing Sum and what it flows into, in each step.
        divergent = [int(i) for i in alignment.divergent]
        assert divergent == sorted(divergent) and len(divergent) == 9
        assert alignment.next_divergence(divergent[0]) == divergent[1]
        assert alignment.next_divergence(divergent[1], forward=False) == divergent[0]
        assert alignment.next_divergence(divergent[-1]) is None
        assert alignment.next_divergence(divergent[0], forward=False) is None
        assert alignment.counterpart_of(-1) is None and alignment.counterpart_of(10**6) is None


def test_align_runs_of_a_run_with_itself_is_the_identity(runs):
    from reader.analysis.compare.diff import align_runs

    with (
        reader.open_run(str(runs / "FULL_TENSOR" / "base")) as a,
        reader.open_run(str(runs / "FULL_TENSOR" / "base")) as b,
    ):
        alignment = align_runs(a, b)
    assert list(alignment.counterpart) == list(range(b.num_traces))
    assert alignment.first is None and not alignment.divergent.shape[0]
