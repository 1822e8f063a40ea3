"""Trends and watch rules on a synthetic Keras-shaped FULL_STATS run whose numbers are
known (tests/synthetic_trends.py), and the rules' thresholds on the command line."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import reader
from reader.analysis.trends.watch_rules import RuleSpecError, parse_rule_specs
from tests.synthetic_trends import LEARNING_RATE, write_trends_dump

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def trends_run(tmp_path):
    write_trends_dump(tmp_path, layers=3, steps=16, explode=6, nan=9)
    return tmp_path


def test_norms_by_layer_are_the_written_norms(trends_run):
    """Each series row is a layer, in model order; a norm computed back from the
    written mean and std is the norm the writer put in; the NaN step is infinite."""
    with reader.open_run(trends_run, None) as dump:
        trends = dump.trends()
        assert trends.rows == ("model/dense_0", "model/dense_1", "model/dense_2")
        assert trends.steps.tolist() == list(range(16)) and trends.unit == "step"
        gradient = trends.series["gradient_norm"]
        expected = [
            (1.0 + 0.1 * ((step * 7 + layer) % 5)) * (layer + 1)
            for layer in range(3)
            for step in range(6)
        ]
        np.testing.assert_allclose(gradient[:, :6].reshape(-1), expected, rtol=1e-9)
        np.testing.assert_allclose(
            trends.series["update_norm"][:, :9], LEARNING_RATE * gradient[:, :9], rtol=1e-9
        )
        np.testing.assert_allclose(trends.series["weight_norm"][1, :3], [3.0, 3.01, 3.02])
        assert np.isinf(gradient[:, 9:]).all()
        assert np.allclose(trends.series["activation_max"], 1.5 * np.arange(1, 4)[:, None])
        assert np.all(trends.relu_zero_share == 0.5)
        assert dump.trends() is trends  # cached until the dump changes


def test_exploding_fires_at_the_jump_with_its_lead_time(trends_run):
    with reader.open_run(trends_run, None) as dump:
        watched = dump.watch()
        assert watched.first_anomaly is not None
        assert watched.first_anomaly.rule == "exploding"
        assert watched.first_anomaly.step == 6
        assert watched.first_harmful_step == 9 and watched.lead_steps == 3
        # One hit per run of firing steps and series, not one per step.
        assert len(watched.hits) == 6 and {hit.step for hit in watched.hits} == {6}
        # Step 6 is 100x its median, step 7 10,000x: k=1000 fires a step later.
        later = dump.watch(parse_rule_specs(["exploding:k=1000"]))
        assert later.first_anomaly is not None
        assert later.first_anomaly.step == 7 and later.lead_steps == 2


@pytest.mark.parametrize(
    "spec, message",
    [
        ("boom", "unknown rule 'boom'"),
        ("exploding:q=1", "rule exploding has no parameter 'q' (its parameters: k, window)"),
        ("exploding:k=0", "k must be a positive number, not '0'"),
        ("exploding:k=ten", "k must be a positive number, not 'ten'"),
        ("exploding:k", "k must be a positive number"),
        ("vanishing:n=2.5", "n must be a positive integer, not '2.5'"),
        ("loss_scale:k=1", "rule loss_scale has no parameter 'k' (its parameters: none)"),
    ],
)
def test_bad_rule_specs_say_what_is_wrong(spec, message):
    with pytest.raises(RuleSpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_rule_specs([spec])


def test_rule_specs_set_parameters():
    config = parse_rule_specs(["exploding:k=5,window=8", "vanishing:relu=0.5"])
    assert config["exploding"] == {"k": 5.0, "window": 8}
    assert config["vanishing"] == {"n": 3, "relu": 0.5}


def test_report_with_a_bad_rule_prints_one_line_and_fails(trends_run):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tfdbg_tui.cli",
            "report",
            str(trends_run),
            "--rule",
            "exploding:k=-1",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "tfdbg-tui report: --rule 'exploding:k=-1': k must be a positive number, not '-1'"
    ]
    human = subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", "report", str(trends_run)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert human.returncode == 0
    assert (
        "Watch rules: 6 hits; first anomaly at step 6, 3 steps before the first "
        "harmful non-finite value (step 9)"
    ) in human.stdout
    assert "step 6: exploding in model/dense_0: gradient norm 120" in human.stdout
