"""FULL_STATS summaries in the reader: the statistics read back, the diagnosis uses them
(an Exp input above ln(float32 max)), and `reader.analysis.compare.diff` compares them."""

from __future__ import annotations

import pytest

from instrument.dump.writer import DumpWriter
from reader import DumpReader
from reader import format as fmt
from reader.analysis.compare.diff import FINITENESS, STATS, compare_runs
from reader.analysis.diagnosis.diagnosis import diagnose_cause
from tests.present import present
from tests.synthetic import FLOAT32, stats_row, write_exp_overflow_run


def test_statistics_read_back_and_nan_means_none(tmp_path):
    w = DumpWriter(str(tmp_path), {"tensor_debug_mode": fmt.FULL_STATS}, flush_interval_s=None)
    nan = float("nan")
    w.add_execution(
        op_type="Exp",
        graph_id=None,
        input_ids=[],
        output_ids=[1, 2],
        device_ids=[0, 0],
        output_dtypes=[FLOAT32] * 2,
        stack_id=None,
        summaries=[
            stats_row(4, low=-2.5, high=7.25, mean=1.5, std=0.25),
            [FLOAT32, 1, 2, 0, 2, 0, 0, 0, 0, nan, nan, nan, nan],
        ],
    )
    w.close()
    first, second = present(DumpReader(w.path).execution(0).summaries)
    assert first is not None
    assert (first.min, first.max, first.mean, first.std) == (-2.5, 7.25, 1.5, 0.25)
    assert first.neg == 2 and first.pos == 2 and not first.is_alert
    assert second is not None
    assert (second.min, second.max, second.mean, second.std) == (None, None, None, None)
    assert second.is_alert and second.pos_inf == 2


def test_diagnosis_names_the_exp_input_above_the_float32_limit(tmp_path):
    reader = DumpReader(write_exp_overflow_run(tmp_path, 95.5))
    cause = reader.root_cause()
    assert cause is not None and present(cause.op).op_type == "Exp"
    diagnosis = diagnose_cause(reader, cause)
    assert diagnosis.pattern == "overflow"
    assert "reached 95.5" in diagnosis.explanation
    assert "ln(3.40e38) = 88.72" in diagnosis.explanation
    assert any("min -3, max 95.5, mean 10, std 30" in line for line in diagnosis.evidence)


@pytest.mark.parametrize(
    "other_max, reason, op_name",
    [
        (95.5, None, None),
        (95.5 * (1 + 1e-5), None, None),  # within the relative tolerance
        (90.0, STATS, "x"),  # both overflow in Exp; x's max differs
        (80.0, FINITENESS, "Exp"),  # B's Exp stays finite: finiteness ranks first
    ],
)
def test_diff_compares_min_max_and_mean(tmp_path, other_max, reason, op_name):
    a = DumpReader(write_exp_overflow_run(tmp_path / "a", 95.5))
    b = DumpReader(write_exp_overflow_run(tmp_path / "b", other_max))
    diff = compare_runs(a, b)
    assert diff.aligned_graph == 2 and "min, max and mean" in diff.compared
    divergence = diff.first_divergence
    if reason is None:
        assert divergence is None
        return
    assert divergence is not None and (divergence.reason, divergence.op_name) == (reason, op_name)
    if reason == STATS:
        assert divergence.detail == "max 95.5 in A, 90 in B"
