"""Trends and watch rules on real Keras fits in FULL_STATS (tests/programs/trends.py):
the learning rate raised mid-run, dead ReLUs, float16 near its limit, a healthy fit."""

from __future__ import annotations

import contextlib
import io
import json
import os

import numpy as np
import pytest

import reader
from reader.analysis.trends.watch_rules import parse_rule_specs
from tests.present import present
from tfdbg_tui.commands import report

HIT_FIELDS = {"rule", "step", "layer", "tensor", "value", "baseline"}


@pytest.fixture(scope="module")
def facts(trend_dumps) -> dict:
    with open(os.path.join(trend_dumps, "facts.json")) as source:
        return json.load(source)


def _open(trend_dumps: str, case: str) -> reader.DumpReader:
    return reader.open_run(os.path.join(trend_dumps, case), None)


def _report_json(trend_dumps: str, case: str, *rules: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = report.main(
            [os.path.join(trend_dumps, case), "--json", *(f"--rule={r}" for r in rules)]
        )
    assert status == 0
    return json.loads(out.getvalue())


def test_raised_learning_rate_explodes_steps_before_the_nan(trend_dumps, facts):
    """The exploding rule fires at the step the rate was raised (the update norm jumps
    with it), before the first harmful NaN; the lead time is the steps between."""
    with _open(trend_dumps, "lr_raised") as dump:
        watched = dump.watch()
        harmful = dump.steps().first_alert_step
        first = watched.first_anomaly
        assert harmful is not None and first is not None
        assert first.rule == "exploding"
        assert first.step == facts["lr_raised"]["raise_step"] < harmful
        assert watched.first_harmful_step == harmful
        assert watched.lead_steps == harmful - first.step >= 2
        assert all(hit.rule == "exploding" for hit in watched.hits)
        assert [hit.step for hit in watched.hits] == sorted(hit.step for hit in watched.hits)
        # The rule's value is above k times its baseline, as the rule says.
        assert all(hit.value > 10 * present(hit.baseline) for hit in watched.hits)


def test_sgd_update_norm_is_the_rate_times_the_gradient_norm(trend_dumps, facts):
    """SGD subtracts rate x gradient: the roll-ups of two different tensors (the
    gradient handed to the optimizer, the value the write subtracts) agree, per layer,
    at both rates; and a weight's norm moves by at most its update's norm."""
    rates = facts["lr_raised"]
    with _open(trend_dumps, "lr_raised") as dump:
        trends = dump.trends()
        raise_at = int(np.searchsorted(trends.steps, rates["raise_step"]))
        assert trends.rows and all(trends.row_is_layer)
        gradient, update = trends.series["gradient_norm"], trends.series["update_norm"]
        weight = trends.series["weight_norm"]
        np.testing.assert_allclose(
            update[:, :raise_at], rates["rate"] * gradient[:, :raise_at], rtol=1e-4
        )
        np.testing.assert_allclose(
            update[:, raise_at], rates["raised_rate"] * gradient[:, raise_at], rtol=1e-4
        )
        moved = np.abs(np.diff(weight[:, : raise_at + 1], axis=1))
        assert np.all(moved <= update[:, :raise_at] * (1 + 1e-4) + 1e-6)


def test_dead_relus_are_vanishing(trend_dumps):
    """The layer whose units never fire: its gradients are exact zeros every step and
    its ReLU outputs all zero; the rule names that layer and no other."""
    with _open(trend_dumps, "dead_relu") as dump:
        trends = dump.trends()
        dead = next(i for i, name in enumerate(trends.rows) if name.endswith("/dead"))
        assert trends.zero_gradients[dead].all()
        assert np.all(trends.relu_zero_share[dead] == 1.0)
        assert not trends.zero_gradients[1 - dead].any()
        watched = dump.watch()
        assert {hit.rule for hit in watched.hits} == {"vanishing"}
        assert {hit.layer for hit in watched.hits} == {trends.rows[dead]}
        assert sorted(hit.value for hit in watched.hits) == [0.0, 1.0]
        # n steps in a row: the hit is at the n-th step of zeros.
        assert watched.first_anomaly is not None
        assert watched.first_anomaly.step == int(trends.steps[2])
        assert present(dump.watch(parse_rule_specs(["vanishing:n=5"])).first_anomaly).step == int(
            trends.steps[4]
        )
        assert dump.first_alert() is None and dump.alerts().total == 0


def test_dead_relus_in_full_health_from_the_zero_counts(trend_dumps):
    """FULL_HEALTH counts exact zeros but records no norm: the same vanishing hits,
    and no gradient norm."""
    with _open(trend_dumps, "dead_relu_health") as dump, _open(trend_dumps, "dead_relu") as stats:
        assert dump.mode == "FULL_HEALTH"
        assert np.isnan(dump.trends().series["gradient_norm"]).all()

        def hits(run):  # the model's name differs between the two fits: its layer's
            return [
                (h.rule, h.step, h.layer.rsplit("/", 1)[1], h.value, h.baseline)
                for h in run.watch().hits
            ]

        assert hits(dump) == hits(stats) and hits(dump)


def test_float16_close_to_its_limit(trend_dumps, facts):
    """mixed_float16: the big layer's float16 MatMul reaches 2 x 5000 x 4 = 40,000,
    within 2x of 65,504; the float32 output layer's larger values do not count. The
    loss scaler's skipped steps are listed too, and neither makes the run unhealthy."""
    big = facts["float16_headroom"]
    expected = big["kernel"] * big["input"] * big["inputs"]
    with _open(trend_dumps, "float16_headroom") as dump:
        watched = dump.watch()
        headroom = [hit for hit in watched.hits if hit.rule == "float16_headroom"]
        assert [hit.value for hit in headroom] == [expected]
        assert headroom[0].baseline == 65504.0
        # The layer is Keras' path for it; the tensor's name carries the name scope's
        # suffix (the scope was entered again when the model was called in fit).
        assert headroom[0].tensor is not None
        assert headroom[0].tensor.endswith("big_1/MatMul:0") and present(
            headroom[0].layer
        ).endswith("/big")
        skipped = [hit.step for hit in watched.hits if hit.rule == "loss_scale"]
        assert skipped == list(dump.harm().skipped_step_numbers) and skipped
        assert dump.watch(parse_rule_specs(["float16_headroom:factor=1.5"])).hits == tuple(
            hit for hit in watched.hits if hit.rule == "loss_scale"
        )
        data = _report_json(trend_dumps, "float16_headroom")
        assert data["first_alert"] is None
        assert data["diagnosis"]["pattern"] == "expected_loss_scaling"
        assert data["first_anomaly"]["rule"] == "float16_headroom"


def test_healthy_fit_fires_no_rule(trend_dumps):
    with _open(trend_dumps, "healthy") as dump:
        trends = dump.trends()
        assert np.isfinite(trends.series["gradient_norm"]).all()
        assert dump.watch().hits == ()
    data = _report_json(trend_dumps, "healthy")
    assert (data["rules"], data["first_anomaly"], data["lead_steps"]) == ([], None, None)


def test_report_json_lists_the_hits_with_the_issue_fields(trend_dumps):
    data = _report_json(trend_dumps, "lr_raised")
    assert data["rules"] and all(set(hit) == HIT_FIELDS for hit in data["rules"])
    assert data["first_anomaly"] == data["rules"][0]
    assert data["lead_steps"] == (
        data["steps"]["first_non_finite_step"] - data["first_anomaly"]["step"]
    )
    assert data["diagnosis"] is not None  # the NaN is still the root cause's
    # A threshold no jump reaches: the rule stays quiet, and so does the lead time.
    quiet = _report_json(trend_dumps, "lr_raised", "exploding:k=1e30")
    assert (quiet["rules"], quiet["first_anomaly"], quiet["lead_steps"]) == ([], None, None)


def test_adam_slot_norms_are_the_moments_the_step_reads(trend_dumps, facts):
    """Adam's m and v, one row each, named as Keras names them: at each step the norm
    of the value the step read, which is the value before the step's update (zero at
    the first step, then what a callback saw before each batch)."""
    seen = facts["adam"]["slot_norms"]
    with _open(trend_dumps, "adam") as dump:
        trends = dump.trends()
        assert "slot_norm" in trends.available()
        slot_rows = {
            name: row
            for row, name in enumerate(trends.rows)
            if np.isfinite(trends.series["slot_norm"][row]).any()
        }
        assert sorted(slot_rows) == sorted(seen) and len(seen) == 8  # 2 layers x 2 x (m, v)
        for name, norms in seen.items():
            np.testing.assert_allclose(
                trends.series["slot_norm"][slot_rows[name]], [0.0, *norms], rtol=1e-5, atol=1e-7
            )
            assert not trends.row_is_layer[slot_rows[name]]
        assert dump.watch().hits == ()


def test_a_custom_loops_variables_are_rows_named_as_the_program_names_them(trend_dumps, facts):
    """Two `tf.Variable`s outside any Keras layer, trained by a `tf.function` step: their
    rows carry the variables' names (`weights`, `bias`; not the ops that read their
    captures, `matmul`, `add`), as do Adam's slots; each row's norm at a step is the
    variable's norm before that step."""
    loop = facts["variables_loop"]
    with _open(trend_dumps, "variables_loop") as dump:
        trends = dump.trends()
        assert trends.rows[:2] == tuple(loop["variables"])
        assert sorted(trends.rows[2:]) == sorted(loop["slots"]) and len(loop["slots"]) == 4
        assert not any(trends.row_is_layer)
        for name in loop["variables"]:
            steps, norms = zip(*loop["norms"][name])
            np.testing.assert_allclose(
                trends.series["weight_norm"][trends.rows.index(name)], norms, rtol=1e-5, atol=1e-7
            )
            assert list(steps) == list(trends.steps)
        for name in loop["slots"]:
            row = trends.series["slot_norm"][trends.rows.index(name)]
            for step, norm in loop["norms"][name]:
                assert row[int(np.searchsorted(trends.steps, step))] == pytest.approx(
                    norm, rel=1e-5, abs=1e-7
                )
        assert row[0] == 0.0  # the moments start at zero
