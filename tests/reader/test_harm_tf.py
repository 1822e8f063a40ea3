"""Contained and harmful values, the healthy verdict, where in the model, and the
diagnoses that know training, on real TensorFlow programs (tests/programs/harm.py).

Healthy runs (a mixed-precision fit whose loss scaler overflows its first steps, a
causal mask written as -inf) must give no first alert and a healthy verdict; in the
harmful ones the root cause must be the op that did the harm, not the first
non-finite value.
"""

from __future__ import annotations

import json
import os
import re

import pytest

import reader
from reader.analysis.diagnosis.diagnosis import diagnose_alert, diagnose_cause
from reader.analysis.diagnosis.verdict import healthy_verdict
from reader.analysis.hunt.harm import LOSS_SCALE_COLLAPSE_STEPS
from tests.present import present
from tests.reader.conftest import TF_PROGRAMS
from tfdbg_tui.commands.report import main as report_main

PROGRAM = os.path.join(TF_PROGRAMS, "harm.py")


def _harm_line(case: str) -> int:
    with open(PROGRAM, encoding="utf-8") as f:
        return next(n for n, line in enumerate(f, 1) if line.rstrip().endswith(f"# HARM {case}"))


def _report(harm_dumps: str, case: str, capsys) -> dict:
    assert report_main([os.path.join(harm_dumps, case), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# -- healthy runs ---------------------------------------------------------------------------


def test_mixed_precision_fit_is_healthy(harm_dumps, capsys):
    """The loss scaler's overflowing steps are contained: no root cause, a verdict."""
    with reader.open_run(os.path.join(harm_dumps, "mixed_precision")) as dump:
        summary = dump.alerts()
        assert summary.total > 0 and summary.harmful == 0
        assert summary.contained["loss_scale"] == summary.total
        assert all(a.contained == "loss_scale" for a in summary.alerts)
        assert dump.first_alert() is None and dump.root_cause() is None
        skipped = dump.harm().skipped_step_numbers
        assert 3 <= len(skipped) < LOSS_SCALE_COLLAPSE_STEPS and skipped[0] == 0
        verdict = healthy_verdict(dump)
        assert verdict is not None and verdict.pattern == "expected_loss_scaling"
        assert (
            f"{len(skipped)} steps overflowed under the loss scale and were skipped, as designed"
        ) in verdict.explanation
        # A contained alert, selected, says why it did no harm.
        assert diagnose_alert(dump, summary.alerts[0]).pattern == "contained"
    report = _report(harm_dumps, "mixed_precision", capsys)
    assert report["first_alert"] is None
    assert report["contained"] == {
        "deliberate": 0,
        "loss_scale": report["num_alerts"],
        "discarded": 0,
    }
    assert report["diagnosis"]["pattern"] == "expected_loss_scaling"
    assert report["num_alerts"] == sum(report["alerts_by_type"].values())  # fields stay


def test_a_custom_loop_whose_scaler_was_built_first_is_healthy(harm_dumps, capsys):
    """No graph is named after the scaler (its branches are `cond_true_N`): the variable
    that unscales the gradients says there is a dynamic loss scale."""
    with reader.open_run(os.path.join(harm_dumps, "mixed_loop_built")) as dump:
        assert not any("scale" in (g.name or "") for g in dump.graphs())
        summary = dump.alerts()
        assert summary.total > 0 and summary.contained["loss_scale"] == summary.total
        assert dump.root_cause() is None
        assert "divide the gradients" in present(dump.harm().loss_scale_evidence)
    report = _report(harm_dumps, "mixed_loop_built", capsys)
    assert report["first_alert"] is None
    assert report["diagnosis"]["pattern"] == "expected_loss_scaling"


def test_masked_attention_is_healthy(harm_dumps, capsys):
    """A causal mask written as -inf, then softmax: deliberate, contained."""
    with reader.open_run(os.path.join(harm_dumps, "masked_attention")) as dump:
        summary = dump.alerts()
        assert {a.op_type for a in summary.alerts} == {"Const", "SelectV2"}
        assert all(a.contained == "deliberate" for a in summary.alerts)
        assert dump.root_cause() is None
    report = _report(harm_dumps, "masked_attention", capsys)
    assert report["first_alert"] is None
    assert report["contained"]["deliberate"] == report["num_alerts"] > 0
    assert report["diagnosis"]["pattern"] == "healthy"
    assert report["diagnosis"]["explanation"].startswith(
        f"No harmful non-finite values; {report['num_alerts']} deliberate -inf"
    )


def test_healthy_report_says_so_in_one_line(harm_dumps, capsys):
    assert report_main([os.path.join(harm_dumps, "mixed_precision")]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "all contained" in line)
    assert "no harmful non-finite values;" in line and "as designed" in line
    assert "Root cause" not in out


# -- harm hidden behind contained values -------------------------------------------------------


def test_masked_logsumexp_lands_on_the_subtraction(harm_dumps, capsys):
    """The fully masked row's -inf is deliberate; the NaN is made by -inf - (-inf)."""
    with reader.open_run(os.path.join(harm_dumps, "masked_logsumexp")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert (cause.alert.op_type, cause.alert.op_name) == ("Sub", "sub")
        assert cause.frame is not None
        assert cause.frame.line == _harm_line("masked_logsumexp")
        assert present(dump.first_alert()).op_type == "Sub"
        contained = {a.op_type: a.contained for a in dump.alerts().alerts}
        assert contained["Const"] == contained["SelectV2"] == contained["Max"] == "deliberate"
        assert diagnose_cause(dump, cause).pattern == "inf_arithmetic"
    report = _report(harm_dumps, "masked_logsumexp", capsys)
    assert report["first_alert"]["op_type"] == "Sub"
    assert report["first_alert"]["phase"] == "forward"


def test_an_additive_mask_of_inf_lands_on_the_product(harm_dumps, capsys):
    """(1 - mask) * -inf: the -inf is written on purpose, the NaN is made where it
    meets the mask's zeros; the diagnosis says so and suggests a select."""
    with reader.open_run(os.path.join(harm_dumps, "additive_mask")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.frame is not None
        assert (cause.alert.op_type, cause.frame.line) == ("Mul", _harm_line("additive_mask"))
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "inf_arithmetic"
        assert "multiplied the infinity written into the program" in diagnosis.explanation
        assert "by 15 exact zeros" in diagnosis.explanation  # the kept scores, 5x5 lower
        assert "tf.where(mask" in diagnosis.suggestion
    report = _report(harm_dumps, "additive_mask", capsys)
    assert report["first_alert"]["op_type"] == "Mul"


def test_one_batch_out_of_range_is_a_spike_not_a_divergence(harm_dumps, capsys):
    """A sample of 1e19 in batch 5: the gradient jumps in that one step (no trend
    before it) and the global norm's square overflows. The diagnosis is a spike in
    step 5 that names the batch's values, not a divergence whose fix is clipping (the
    program clips already)."""
    with reader.open_run(os.path.join(harm_dumps, "outlier_batch")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.trace is not None
        assert cause is not None
        step = dump.steps().of_execution(cause.trace.step)
        assert step == 40 // 8
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "spike"
        assert f"in step {step}" in diagnosis.explanation
        assert "the batch of that step held values up to 1e+19" in diagnosis.explanation
        assert "clip" not in diagnosis.suggestion.split(":")[0]
    assert _report(harm_dumps, "outlier_batch", capsys)["diagnosis"]["pattern"] == "spike"


def test_a_float16_gradient_that_overflows_is_an_overflow(harm_dumps):
    """A gradient MatMul in float16 turns finite inputs into infinities: an overflow of
    float16, with the largest input magnitude, not a "singular point" of a forward op."""
    with reader.open_run(os.path.join(harm_dumps, "float16_gradient")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert dump.place(cause.alert).phase == "gradient"
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "overflow"
        assert "float16's largest finite value is 65504" in diagnosis.explanation
        assert "the largest finite input magnitude was" in diagnosis.explanation


def test_sqrt_behind_tf_where_is_healthy(harm_dumps, capsys):
    """The square roots of negatives behind tf.where: the select does not pick them, and
    SqrtGrad makes zeros of their zero gradient. Not a root cause: the run is healthy."""
    with reader.open_run(os.path.join(harm_dumps, "sqrt_where")) as dump:
        summary = dump.alerts()
        assert {a.op_type for a in summary.alerts} == {"Sqrt"}
        assert all(a.contained == "discarded" for a in summary.alerts)
        assert dump.root_cause() is None
    report = _report(harm_dumps, "sqrt_where", capsys)
    assert report["first_alert"] is None and report["diagnosis"]["pattern"] == "healthy"
    assert report["contained"]["discarded"] == report["num_alerts"] == 3


def test_where_gradient_trap(harm_dumps, capsys):
    """log(0) behind tf.where is discarded; the harm is in its gradient."""
    with reader.open_run(os.path.join(harm_dumps, "where_trap")) as dump:
        by_op = {a.op_name: a for a in dump.alerts().alerts}
        assert by_op["Log"].contained == "discarded"
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.op_type == "Reciprocal"
        assert cause.frame is not None
        assert cause.frame.line == _harm_line("where_trap")
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "where_gradient_trap"
        assert "`tf.math.log(weights)`" in diagnosis.explanation
        assert "double tf.where" in diagnosis.suggestion
    report = _report(harm_dumps, "where_trap", capsys)
    assert report["first_alert"]["phase"] == "gradient"
    assert report["contained"]["discarded"] == 1


def test_loss_scale_collapse(harm_dumps, capsys):
    """Every step skipped: not healthy; the steps are named."""
    with reader.open_run(os.path.join(harm_dumps, "loss_scale_collapse")) as dump:
        harm = dump.harm()
        assert len(harm.collapse_steps) >= LOSS_SCALE_COLLAPSE_STEPS
        assert harm.collapse_steps[0] == 0
        cause = dump.root_cause()
        assert cause is not None
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "loss_scale_collapse"
        last = harm.collapse_steps[-1]
        assert f"every step from 0 to {last}" in diagnosis.explanation
        assert "SqrtGrad" in diagnosis.explanation  # the gradient non-finite at any scale
    report = _report(harm_dumps, "loss_scale_collapse", capsys)
    assert report["first_alert"] is not None
    assert report["diagnosis"]["pattern"] == "loss_scale_collapse"


# -- diagnoses that know training ----------------------------------------------------------


@pytest.mark.parametrize("case", ["diverging", "diverging_stats"])
def test_divergence_says_since_when_and_how_fast(harm_dumps, case):
    """FULL_HEALTH's magnitudes (format 2.2) show the growth as FULL_STATS' min and max."""
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        cause = dump.root_cause()
        assert cause is not None
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "divergence"
        assert (
            "at step 0 to " in diagnosis.explanation and " per step over " in diagnosis.explanation
        )
        assert present(dump.steps().of_execution(cause.alert.step)) > 10
        grew = re.search(
            r"grew from ([0-9.e+-]+) at step 0 to ([0-9.e+-]+) at step (\d+)", diagnosis.explanation
        )
        assert grew and float(grew[2]) / float(grew[1]) >= 100
        assert int(grew[3]) <= present(dump.steps().of_execution(cause.alert.step))


def test_a_keras_fit_that_diverges_in_a_few_steps_is_a_divergence(harm_dumps):
    """A learning rate far too high overflows the loss at the fourth batch: three
    finite values before the overflow are growth enough (x1e7 a step), not `overflow`
    with advice about softmax."""
    with reader.open_run(os.path.join(harm_dumps, "keras_diverging")) as dump:
        cause = dump.root_cause()
        assert cause is not None and present(dump.steps().of_execution(cause.alert.step)) <= 4
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "divergence", diagnosis
        grew = re.search(
            r"grew from ([0-9.e+-]+) at step 0 to ([0-9.e+-]+) at step (\d+), "
            r"about x([0-9.e+-]+) per step over (\d+) steps",
            diagnosis.explanation,
        )
        assert grew, diagnosis.explanation
        assert float(grew[2]) / float(grew[1]) >= 1e6 and 3 <= int(grew[5]) <= 5
        # The pace is per step, over the steps between the two named.
        assert int(grew[5]) == int(grew[3])
        assert float(grew[4]) ** int(grew[5]) == pytest.approx(
            float(grew[2]) / float(grew[1]), rel=0.05
        )
        assert "learning rate" in diagnosis.suggestion


def test_a_divergence_over_calls_of_several_batches_is_paced_per_step(harm_dumps):
    """steps_per_execution=2: each call (step) traces the tensor twice; the pace is per
    step, over the steps between the two named, not per trace."""
    with reader.open_run(os.path.join(harm_dumps, "keras_diverging_spe")) as dump:
        diagnosis = diagnose_cause(dump, present(dump.root_cause()))
        assert diagnosis.pattern == "divergence", diagnosis
        grew = re.search(
            r"grew from ([0-9.e+-]+) at step (\d+) to ([0-9.e+-]+) at step "
            r"(\d+), about x([0-9.e+-]+) per step over (\d+) steps?",
            diagnosis.explanation,
        )
        assert grew, diagnosis.explanation
        steps = int(grew[4]) - int(grew[2])
        assert int(grew[6]) == steps >= 1
        assert float(grew[5]) ** steps == pytest.approx(float(grew[3]) / float(grew[1]), rel=0.05)


def test_full_health_magnitudes_are_each_tensors_largest(harm_dumps):
    """Every finite FULL_HEALTH trace of the diverging loop's weight update carries
    its largest |x|; growing step by step."""
    with reader.open_run(os.path.join(harm_dumps, "diverging")) as dump:
        cause = dump.root_cause()
        assert cause is not None and cause.trace is not None
        summaries = [present(dump.trace(i).summary) for i in range(cause.trace.index)]
        finite = [s for s in summaries if not s.is_alert and s.size]
        assert finite and all(s.max_abs is not None and s.max_abs >= 0 for s in finite)
        alerting = [s for s in summaries if s.is_alert]
        assert all(s.max_abs is None for s in alerting)


def test_acos_domain_error(harm_dumps):
    with reader.open_run(os.path.join(harm_dumps, "acos_domain")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.frame is not None
        assert cause.frame.line == _harm_line("acos_domain")
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "domain_error"
        assert "acos is defined on [-1, 1]" in diagnosis.explanation


def test_adam_epsilon_names_the_optimizer_and_setting(harm_dumps, capsys):
    with reader.open_run(os.path.join(harm_dumps, "adam_epsilon")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.op_type == "RealDiv"
        diagnosis = diagnose_cause(dump, cause)
        assert diagnosis.pattern == "library_nan"
        assert "Adam" in diagnosis.explanation and "epsilon" in diagnosis.suggestion
        assert "divide_no_nan" not in diagnosis.suggestion
    first = _report(harm_dumps, "adam_epsilon", capsys)["first_alert"]
    assert first["phase"] == "optimizer"
    assert first["library_frame"]["file"].endswith(os.path.join("optimizers", "adam.py"))
    assert first["library_frame"]["function"] == "update_step"


@pytest.mark.parametrize(
    "case, phase, layer",
    [
        ("adam_epsilon", "forward", "ranker/scorer"),
        # Keras numbers the default names across the process's models and layers.
        ("loss_scale_collapse", "gradient", r"sequential(_\d+)?/(dense(_\d+)?|__sqrt_layer)"),
    ],
)
def test_alerts_carry_phase_and_layer(harm_dumps, case, phase, layer):
    """A layer's ops (forward, and their gradients) name the layer's path as Keras
    knows it (`Layer.path`: the model's name, then the layer's), without the name
    scopes' `_1` suffixes."""
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        places = [dump.place(a) for a in dump.alerts().alerts]
        found = [p for p in places if p.phase == phase and p.layer]
        assert found, places
        assert all(re.fullmatch(layer, present(p.layer)) for p in found), {p.layer for p in found}


def test_curt_health_follows_deliberate_infinities_through_carriers_only(harm_dumps):
    """CURT_HEALTH cannot tell NaN from inf: the mask is still deliberate (a select
    carries it), and the subtraction is still the root cause (it could make NaN)."""
    with reader.open_run(os.path.join(harm_dumps, "masked_attention_curt")) as dump:
        assert dump.alerts().total and dump.root_cause() is None
        assert present(healthy_verdict(dump)).pattern == "healthy"
    with reader.open_run(os.path.join(harm_dumps, "masked_logsumexp_curt")) as dump:
        assert present(dump.root_cause()).alert.op_type == "Sub"


# -- where a non-finite input came from ------------------------------------------------------


def _input_diagnosis(dump):
    diagnosis = diagnose_cause(dump, dump.root_cause())
    assert diagnosis.pattern == "nonfinite_input"
    assert diagnosis.source is not None
    return diagnosis


@pytest.mark.parametrize(
    "case, element, position", [("dataset_batch", None, None), ("dataset_batch_tensor", 7, (3, 2))]
)
def test_dataset_input_names_the_batch_and_element(harm_dumps, case, element, position, capsys):
    """`for x, y in dataset:` delivers a NaN in element 7 (batch 1, row 3, column 2):
    the batch always, the element and column when the run kept values; the
    expression is the loop's iterable, not the whole loop."""
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert (cause.alert.kind, cause.alert.op_type) == ("eager", "IteratorGetNext")
        assert cause.frame is not None
        assert cause.frame.line == _harm_line("dataset_batch")
        diagnosis = _input_diagnosis(dump)
        source = diagnosis.source
        assert (source.kind, source.batch, source.element, source.position) == (
            "dataset",
            1,
            element,
            position,
        )
        assert "in batch 1" in diagnosis.explanation
        assert "`_nan_batches()`" in diagnosis.explanation
        assert "train_step(x, y)" not in diagnosis.explanation
        if element is not None:
            assert "row 3, column 2 of the batch: element 7 of the dataset" in diagnosis.explanation
    report = _report(harm_dumps, case, capsys)
    source_line = report["first_alert"]["source"]
    assert source_line["expression"] == "_nan_batches()"
    assert (
        source_line["text"][source_line["column"] : source_line["end_column"]] == "_nan_batches()"
    )
    assert report["diagnosis"]["source"]["batch"] == 1
    assert report["diagnosis"]["source"]["element"] == element


def test_a_nan_in_the_data_a_map_transforms_names_the_data_and_batch(harm_dumps):
    """A `map` normalises a dataset element that holds a NaN: the element is the map
    function's argument, recorded but not traced, and `x - 1.0` makes no NaN from
    finite values, so the NaN came in with the data (not "from finite inputs" by
    cancelling infinities); the batch is the one the train function received."""
    with reader.open_run(os.path.join(harm_dumps, "dataset_map")) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.graph_name is not None
        assert cause.alert.graph_name.startswith("Dataset_map")
        assert cause.alert.op_type == "Sub" and present(cause.frame).line == _harm_line(
            "dataset_map"
        )
        diagnosis = _input_diagnosis(dump)
        assert (diagnosis.source.kind, diagnosis.source.batch) == ("dataset", 3)
        assert "the data the tf.data pipeline was built from" in diagnosis.explanation
        assert "finite inputs" not in diagnosis.explanation


@pytest.mark.parametrize("case, element", [("keras_data", None), ("keras_data_tensor", 13)])
def test_keras_fit_data_names_the_batch_and_sample(harm_dumps, case, element):
    """model.fit on arrays: Keras gathers each batch in a dataset function, whose calls
    finish out of order; the batch is the one the train function received."""
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        cause = dump.root_cause()
        assert cause is not None
        assert cause.alert.graph_name is not None
        assert cause.alert.graph_name.startswith("Dataset_")
        source = _input_diagnosis(dump).source
        assert (source.kind, source.batch, source.element) == ("dataset", 3, element)
        if element is not None:
            assert source.position == (1, 1)


def test_keras_fit_data_under_a_buffer_that_dropped_earlier_batches(harm_dumps):
    """The deliveries before the NaN's batch left the disk: the batch is not known, and
    the diagnosis says how many kept deliveries came before, not a wrong batch."""
    with reader.open_run(os.path.join(harm_dumps, "keras_data_buffered")) as dump:
        assert dump.kept_traces()[0][0] > 0
        diagnosis = _input_diagnosis(dump)
        assert (diagnosis.source.kind, diagnosis.source.batch) == ("dataset", None)
        assert "its number is not known" in diagnosis.explanation
        assert "in batch" not in diagnosis.explanation


@pytest.mark.parametrize(
    "case, op_type, kind, function",
    [
        ("py_function", "EagerPyFunc", "py_function", "load"),
        ("numpy_function", "PyFunc", "numpy_function", "scale"),
    ],
)
def test_python_function_input_names_the_function(harm_dumps, case, op_type, kind, function):
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        assert present(dump.root_cause()).alert.op_type == op_type
        diagnosis = _input_diagnosis(dump)
        assert (diagnosis.source.kind, diagnosis.source.function) == (kind, function)
        assert f"the Python function `{function}`" in diagnosis.explanation
        assert f"`{function}`" in diagnosis.suggestion


@pytest.mark.parametrize(
    "case, kind, words",
    [
        ("variable_initial", "variable_initial", "its initial value, at `tf.Variable("),
        ("variable_assigned", "variable_assigned", "at `weights.assign("),
        (
            "variable_restored",
            "variable_restored",
            "restored from checkpoint key `weights/.ATTRIBUTES/VARIABLE_VALUE`",
        ),
    ],
)
def test_variable_input_says_how_the_variable_got_it(harm_dumps, case, kind, words):
    """A variable read in a tf.function: the call's captured handle leads to the
    variable's eager writes (its creation, an assignment); a restore is its own root
    cause. Each names the user's line."""
    with reader.open_run(os.path.join(harm_dumps, case)) as dump:
        diagnosis = _input_diagnosis(dump)
        assert diagnosis.source.kind == kind
        assert words in diagnosis.explanation
        assert diagnosis.source.frame.line == _harm_line(case)
        if kind == "variable_restored":
            # The dump cannot know why the checkpoint holds them (saved late, or edited
            # by hand): the fix says what to check, not what happened.
            assert "check" in diagnosis.suggestion and "np.isfinite" in diagnosis.suggestion
            assert "was saved after" not in diagnosis.suggestion
            assert "restore an earlier one" not in diagnosis.suggestion
