"""The harm classification and the input sources on TensorFlow's own dumps.

tests/programs/harm.py's cases run under `tf.debugging.experimental.enable_dump_debug_info`
(`harm_tf_dumps`): the reader gives the same verdicts as on ours. What a TensorFlow dump
cannot give: column spans (so no exact expression: the Python function's name is read
from the line), FULL_STATS or magnitudes (so no divergence), and the traces of our dumper's own
choices (it traces a dataset function's arguments, ours does not).
"""

from __future__ import annotations

import os

import reader
from reader.analysis.diagnosis.diagnosis import diagnose_cause
from reader.analysis.diagnosis.verdict import healthy_verdict
from reader.model import DUMPER_TENSORFLOW
from tests.present import present


def _open(harm_tf_dumps: str, case: str):
    dump = reader.open_run(os.path.join(harm_tf_dumps, case))
    assert dump.metadata.dumper == DUMPER_TENSORFLOW
    return dump


def test_masked_attention_is_healthy_in_both_modes(harm_tf_dumps):
    for mode in ("FULL_HEALTH", "CURT_HEALTH"):
        with _open(harm_tf_dumps, f"masked_attention-{mode}") as dump:
            summary = dump.alerts()
            assert summary.total and summary.contained["deliberate"] == summary.total
            assert dump.first_alert() is None and dump.root_cause() is None
            assert present(healthy_verdict(dump)).pattern == "healthy"


def test_masked_logsumexp_in_curt_health_is_the_subtraction(harm_tf_dumps):
    """CURT_HEALTH cannot tell NaN from inf: the subtraction of two deliberate -inf is
    still the root cause, and its diagnosis says what the mode cannot."""
    with _open(harm_tf_dumps, "masked_logsumexp-CURT_HEALTH") as dump:
        cause = dump.root_cause()
        assert (cause.alert.op_type, cause.alert.op_name) == ("Sub", "sub")
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "inf_arithmetic"
        assert "CURT_HEALTH does not tell NaN from infinity" in diagnosis.explanation


def test_where_trap_and_mixed_precision(harm_tf_dumps):
    with _open(harm_tf_dumps, "where_trap-FULL_HEALTH") as dump:
        assert dump.alerts().contained["discarded"] == 1
        assert diagnose_cause(dump, dump.root_cause()).pattern == "where_gradient_trap"
    with _open(harm_tf_dumps, "mixed_precision-FULL_HEALTH") as dump:
        summary = dump.alerts()
        assert summary.total and summary.contained["loss_scale"] == summary.total
        assert present(healthy_verdict(dump)).pattern == "expected_loss_scaling"


def test_input_sources(harm_tf_dumps):
    expected = {
        "dataset_batch-FULL_TENSOR": ("dataset", 1, 7, None),
        "keras_data-FULL_TENSOR": ("dataset", 3, 13, None),
        "py_function-FULL_HEALTH": ("py_function", None, None, "load"),
        "variable_initial-FULL_HEALTH": ("variable_initial", None, None, None),
    }
    for case, (kind, batch, element, function) in expected.items():
        with _open(harm_tf_dumps, case) as dump:
            diagnosis = diagnose_cause(dump, dump.root_cause())
            assert diagnosis.pattern == "nonfinite_input", case
            source = diagnosis.source
            assert source is not None
            assert (source.kind, source.batch, source.element, source.function) == (
                kind,
                batch,
                element,
                function,
            ), case


def test_a_divergence_in_tensorflows_dump_is_an_overflow(harm_tf_dumps):
    """TensorFlow's FULL_HEALTH rows carry no magnitudes: the growth cannot be seen,
    and the diagnosis stays the overflow (docs/reader.md says which modes show it)."""
    with _open(harm_tf_dumps, "diverging-FULL_HEALTH") as dump:
        cause = dump.root_cause()
        assert cause is not None and cause.trace is not None
        assert all(dump.trace(i).summary.max_abs is None for i in range(cause.trace.index))
        assert diagnose_cause(dump, cause).pattern != "divergence"
