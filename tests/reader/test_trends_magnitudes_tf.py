"""Trends under Keras' dynamic loss scale and from FULL_HEALTH's magnitudes, on real
programs: mixed_float16 fits and a custom loop (tests/programs/trends.py), the
diverging custom loop (tests/programs/harm.py), TensorFlow's own FULL_HEALTH dump of it."""

from __future__ import annotations

import contextlib
import io
import json
import os

import numpy as np
import pytest

import reader
from reader.analysis.trends.trend_roles import LOSS_SCALE_ROW
from reader.analysis.trends.watch_rules import skipped_steps
from tfdbg_tui.commands import report

MIXED = ["mixed_fit", "mixed_loop", "mixed_fit_health"]
# tests/programs/harm.py's diverging loop: its data and rate.
DIVERGE_RATE = 3.0


@pytest.fixture(scope="module")
def facts(trend_dumps) -> dict:
    with open(os.path.join(trend_dumps, "facts.json")) as source:
        return json.load(source)


def _open(root: str, case: str) -> reader.DumpReader:
    return reader.open_run(os.path.join(root, case), None)


def _keras_scales(initial: float, growth: int, skipped: set[int], steps: int) -> list[float]:
    """The scale Keras' LossScaleOptimizer uses in each step: halved after a skipped
    step, doubled after `growth` applied steps in a row."""
    scale, counter, out = initial, 0, []
    for step in range(steps):
        out.append(scale)
        if step in skipped:
            scale, counter = scale / 2, 0
        elif counter == growth - 1:
            scale, counter = scale * 2, 0
        else:
            counter += 1
    return out


@pytest.mark.parametrize("case", MIXED)
def test_loss_scale_per_step_is_keras_dynamic_scale(trend_dumps, facts, case):
    """The scale read from the dump is, step by step, what Keras' algorithm makes of
    the initial scale and the steps the harm analysis found skipped (an independent
    reading: the gradients' overflow); so it halves on overflow and doubles after its
    period, and the rule's hits carry the scale that overflowed."""
    fact = facts[case]
    with _open(trend_dumps, case) as dump:
        trends = dump.trends()
        scale = trends.loss_scale()
        assert scale is not None and trends.rows[-1] == LOSS_SCALE_ROW
        skipped = set(dump.harm().skipped_step_numbers)
        assert skipped and trends.steps.tolist() == list(range(fact["steps"]))
        expected = _keras_scales(
            fact["initial_scale"], fact["growth_steps"], skipped, fact["steps"]
        )
        assert scale.tolist() == expected
        assert any(b == 2 * a for a, b in zip(expected, expected[1:]))  # it grew, too
        assert skipped_steps(trends, dump.harm()) == sorted(skipped)
        hits = [hit for hit in dump.watch().hits if hit.rule == "loss_scale"]
        assert [(hit.step, hit.value) for hit in hits] == [
            (step, expected[step]) for step in sorted(skipped)
        ]
        # A healthy fit under the scaler: its skipped steps are the only hits. The
        # scaled gradients near float16's limit are the scaler's probe, not a warning
        # (before they were exempt, 7 of them fired float16_headroom here).
        assert dump.watch().hits == tuple(hits)
        # Only the loss scale's row has a scale; it has no gradient.
        layers = [r for r, name in enumerate(trends.rows) if name != LOSS_SCALE_ROW]
        assert np.isnan(trends.series["loss_scale"][layers]).all()
        assert np.isnan(trends.series["gradient_max"][-1]).all()


@pytest.mark.parametrize("case", ["mixed_fit", "mixed_loop"])
def test_mixed_precision_series_inside_the_scalers_branch(trend_dumps, facts, case):
    """The optimizer writes inside the branch the scaler runs only on finite
    gradients: per layer, the gradient (unscaled) and update norms exist exactly on
    the applied steps, SGD's update is the rate times the gradient, and the weights
    stand still across a skipped step."""
    with _open(trend_dumps, case) as dump:
        trends = dump.trends()
        layers = [r for r, layer in enumerate(trends.row_is_layer) if layer]
        assert len(layers) == 3
        applied = np.array(
            [s not in dump.harm().skipped_step_numbers for s in trends.steps.tolist()]
        )
        gradient = trends.series["gradient_norm"][layers]
        update = trends.series["update_norm"][layers]
        weight = trends.series["weight_norm"][layers]
        assert np.isfinite(gradient[:, applied]).all() and np.isnan(gradient[:, ~applied]).all()
        np.testing.assert_allclose(update[:, applied], 0.01 * gradient[:, applied], rtol=1e-4)
        # Unscaled: norms of a sane fit, not the scaled ones (thousands of times larger).
        assert gradient[:, applied].max() < 100
        assert np.isfinite(weight).all()
        stay = np.flatnonzero(~applied[:-1])
        np.testing.assert_array_equal(weight[:, stay + 1], weight[:, stay])
        move = np.flatnonzero(applied[:-1])
        assert (
            np.abs(weight[:, move + 1] - weight[:, move]) <= update[:, move] * (1 + 1e-4) + 1e-7
        ).all()


def test_adam_under_the_loss_scaler_has_its_gradients_and_slots(trend_dumps, facts):
    """Adam inside the scaler's branch: its ops are the optimizer's (``cond/adam/...``),
    so its moments are slot rows, one per variable and moment, with values on the
    applied steps only (the branch does not run on a skipped step); the layers keep
    their gradients, which the moments' writes must not take from them."""
    with _open(trend_dumps, "mixed_adam") as dump:
        trends = dump.trends()
        skipped = set(dump.harm().skipped_step_numbers)
        applied = np.array([s not in skipped for s in trends.steps.tolist()])
        assert skipped and applied.any()
        layers = [r for r, layer in enumerate(trends.row_is_layer) if layer]
        assert len(layers) == 3
        gradient = trends.series["gradient_norm"][layers]
        assert np.isfinite(gradient[:, applied]).all()
        assert np.isnan(gradient[:, ~applied]).all()
        slots = [
            r for r, name in enumerate(trends.rows) if name.endswith(("_momentum", "_velocity"))
        ]
        assert len(slots) == 2 * facts["mixed_adam"]["variables"]
        slot = trends.series["slot_norm"][slots]
        assert np.isfinite(slot[:, applied]).all() and np.isnan(slot[:, ~applied]).all()
        assert not any(trends.row_is_layer[r] for r in slots)
        assert dump.place(dump.alerts().alerts[0]).phase != "optimizer"  # the gradients


def test_full_health_magnitudes_match_full_stats(trend_dumps):
    """The same seeded mixed fit in FULL_HEALTH and in FULL_STATS: FULL_HEALTH's
    magnitudes give the gradient, update and weight max |x| that FULL_STATS' min and
    max give, and no norm."""
    with _open(trend_dumps, "mixed_fit_health") as health, _open(trend_dumps, "mixed_fit") as stats:
        a, b = health.trends(), stats.trends()
        for name in ("gradient_max", "update_max", "weight_max", "activation_max", "loss_scale"):
            np.testing.assert_allclose(a.series[name], b.series[name], rtol=1e-6)
            assert np.isfinite(a.series[name]).any()
        assert np.isnan(a.series["gradient_norm"]).all()
        assert a.available()[0] == "gradient_max"


def test_full_health_fit_explodes_at_the_raised_rate(trend_dumps, facts):
    """FULL_HEALTH has no norms; the update max |x| jumps at the step the rate was
    raised, as the update norm does in FULL_STATS: the same first anomaly and lead."""
    with _open(trend_dumps, "lr_raised_health") as health, _open(trend_dumps, "lr_raised") as stats:
        first, same = health.watch(), stats.watch()
        assert first.first_anomaly is not None and first.first_anomaly.rule == "exploding"
        assert first.first_anomaly.step == facts["lr_raised_health"]["raise_step"]
        assert same.first_anomaly is not None
        assert (first.first_anomaly.step, first.lead_steps) == (
            same.first_anomaly.step,
            same.lead_steps,
        )
        assert "update max |x|" in first.first_anomaly.evidence


def _diverging_weights(steps: int) -> list[np.ndarray]:
    """The diverging loop's weight before each step, in float64 (its data as
    tests/programs/harm.py makes it)."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(16, 4)).astype("float32").astype(np.float64)
    y = rng.normal(size=(16, 1)).astype("float32").astype(np.float64)
    w, out = np.zeros((4, 1)), []
    for _ in range(steps):
        out.append(w)
        w = w - DIVERGE_RATE * (2 / 16) * x.T @ (x @ w - y)
    return out


def test_diverging_loop_full_health_shows_the_growth(harm_dumps):
    """The custom loop whose rate is too high, in FULL_HEALTH: its weight's max |x| per
    step is the one numpy computes for the same data, its update is the rate times its
    gradient, and the exploding rule fires on the growth long before the NaN."""
    with _open(harm_dumps, "diverging") as dump:
        trends = dump.trends()
        assert dump.mode == "FULL_HEALTH" and len(trends.rows) == 1
        weight = trends.series["weight_max"][0]
        gradient = trends.series["gradient_max"][0]
        update = trends.series["update_max"][0]
        expected = [float(np.abs(w).max()) for w in _diverging_weights(trends.steps.size)]
        finite = np.flatnonzero(np.isfinite(weight) & (np.array(expected) < 1e30))
        assert finite.size > 20
        np.testing.assert_allclose(weight[finite], np.array(expected)[finite], rtol=1e-3)
        both = np.isfinite(gradient) & np.isfinite(update)
        np.testing.assert_allclose(update[both], DIVERGE_RATE * gradient[both], rtol=1e-6)
        watched = dump.watch()
        first = watched.first_anomaly
        assert first is not None and first.rule == "exploding" and first.tensor == trends.rows[0]
        assert watched.first_harmful_step is not None
        assert watched.lead_steps == watched.first_harmful_step - first.step >= 10


def test_a_layer_without_magnitudes_gives_no_series(trend_dumps, facts):
    """FULL_HEALTH summarises a kernel of 128 x 128 elements the stock way, without a
    magnitude: that layer's weight and gradient cells are blank and marked unknown (not
    the max of its bias alone), the small layers around it have theirs."""
    with _open(trend_dumps, "big_layer_health") as dump:
        trends = dump.trends()
        big = next(r for r, name in enumerate(trends.rows) if name.endswith("/big"))
        small = [r for r in range(len(trends.rows)) if r != big]
        for name in ("weight_max", "gradient_max", "update_max"):
            assert np.isnan(trends.series[name][big]).all()
            assert trends.unknown[name][big].all()
            assert np.isfinite(trends.series[name][small]).all()
            assert not trends.unknown[name][small].any()
        # Its activations (8 x 128 elements) are small enough for a magnitude.
        assert np.isfinite(trends.series["activation_max"][big]).all()


def test_tensorflow_full_health_dump_has_no_magnitude_series(harm_tf_dumps):
    """TensorFlow's own FULL_HEALTH dumps record no magnitude: every magnitude cell is
    unknown (or non-finite, once the weight overflowed) and no series is offered,
    rather than a wrong one."""
    with _open(harm_tf_dumps, "diverging-FULL_HEALTH") as dump:
        trends = dump.trends()
        assert trends.rows and trends.available() == ()
        weight = trends.series["weight_max"]
        assert trends.unknown["weight_max"][0, 0] and not np.isfinite(weight).any()
        assert (trends.unknown["weight_max"] | np.isinf(weight)).all()


def test_report_json_carries_the_loss_scale(trend_dumps):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert report.main([os.path.join(trend_dumps, "mixed_fit"), "--json"]) == 0
    rules = [hit for hit in json.loads(out.getvalue())["rules"] if hit["rule"] == "loss_scale"]
    assert rules[0] == {
        "rule": "loss_scale",
        "step": 0,
        "layer": None,
        "tensor": None,
        "value": 2.0**22,
        "baseline": None,
    }
