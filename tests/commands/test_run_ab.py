"""`tfdbg-tui run --ab`: two runs of a real program, then the comparison (`diff --json`
in a pipe), or one line saying why the variant cannot apply."""

from __future__ import annotations

import pytest

from tests.commands.conftest import PROGRAMS, run_env, tfdbg_run
from tests.program_runs import line_of
from tfdbg_tui import exit_codes as codes


@pytest.fixture(scope="module")
def xla_ab(workdir):
    return tfdbg_run(
        "--ab", "xla", "--json", "--", "python", str(PROGRAMS / "run_xla.py"), cwd=workdir
    )


def test_ab_xla_lands_on_the_sum_that_overflows_only_under_xla(xla_ab):
    assert xla_ab.status == 0, xla_ab.stderr[-3000:]
    lines = xla_ab.our_lines()
    assert "run B, with XLA off, into" in lines[1]
    if "B (XLA off: no harmful NaN or infinity) as the good run" not in lines[2]:
        pytest.skip("this machine's CPU kernel does not sum to 0 without XLA: " + lines[2])
    diff = xla_ab.json()
    assert "/B/" in diff["a"] and "/A/" in diff["b"]  # good: XLA off; bad: as it is
    divergence = diff["first_divergence"]
    assert (divergence["op_type"], divergence["reason"]) == ("Sum", "finiteness")
    assert divergence["source"]["line"] == line_of(PROGRAMS / "run_xla.py", "# SUM_LINE")
    assert divergence["source"]["expression"] == "tf.reduce_sum(x)"


@pytest.fixture(scope="module")
def precision_ab(workdir):
    return tfdbg_run(
        "--ab",
        "precision",
        "--json",
        "--",
        "python",
        str(PROGRAMS / "run_keras_fit.py"),
        cwd=workdir,
    )


def test_ab_precision_compares_float32_with_mixed_float16(precision_ab):
    assert precision_ab.status == 0, precision_ab.stderr[-3000:]
    lines = precision_ab.our_lines()
    assert "run B, with mixed_float16, into" in lines[1]
    assert (
        "A (as it is: no harmful NaN or infinity) as the good run with B "
        "(mixed_float16: a harmful NaN or infinity) as the bad one"
    ) in lines[2]
    diff = precision_ab.json()
    assert diff["b_mode"] == diff["a_mode"] == "FULL_HEALTH"
    divergence = diff["first_divergence"]
    assert divergence is not None and "non-finite in B" in divergence["detail"]


def test_ab_precision_says_it_cannot_apply_when_the_program_sets_its_policy(workdir):
    done = tfdbg_run(
        "--ab",
        "precision",
        "--json",
        "--",
        "python",
        str(PROGRAMS / "run_keras_fit.py"),
        "--policy",
        "float32",
        cwd=workdir,
    )
    assert done.status == codes.EXIT_AB_NOT_APPLICABLE
    assert done.stdout == ""
    assert (
        "--ab precision cannot apply: the program sets its own dtype policy (float32) "
        "over mixed_float16"
    ) in done.our_lines()[-1]


def test_ab_env_that_changes_nothing_is_refused_after_run_a(workdir):
    done = tfdbg_run(
        "--ab",
        "env:TFDBG_AB_TEST=1",
        "--",
        "python",
        str(PROGRAMS / "run_script.py"),
        "--data",
        "data/values.txt",
        cwd=workdir,
        env=run_env(TFDBG_AB_TEST="1"),
    )
    assert done.status == codes.EXIT_AB_NOT_APPLICABLE
    assert "run B" not in done.stderr
    assert (
        "--ab env:TFDBG_AB_TEST=1 cannot apply: TFDBG_AB_TEST is already '1' here"
        in done.our_lines()[-1]
    )
