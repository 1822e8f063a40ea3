"""The origin rules of the chain on hand-made nodes and values, without TensorFlow
(tests/reader/test_chain_tf.py runs them on real programs): a value made on one
replica only, and a learning rate that rose up to the divergence."""

from __future__ import annotations

import pytest

from reader.analysis.diagnosis.chain_rules import RULES, ChainNode, rise_start
from reader.model import Summary

ONE_REPLICA = next(rule for rule in RULES if rule.kind == "one_replica")


def health(zero: int = 0, neg: int = 0, pos: int = 2, inf: int = 0, max_abs=3.0) -> Summary:
    return Summary(
        "FULL_HEALTH",
        "float32",
        1,
        zero + neg + pos + inf,
        neg_inf=inf,
        pos_inf=0,
        nan=0,
        neg=neg,
        zero=zero,
        pos=pos,
        max_abs=None if inf else max_abs,
    )


def node(output: Summary, others: tuple[Summary | None, ...], root: ChainNode | None = None):
    return ChainNode(
        "Sum",
        "replica_1/Sum",
        output,
        "float32",
        (),
        replica=1,
        counterparts=tuple((r, s) for r, s in zip((0, 2), others, strict=False)),
        root=root,
    )


ROOT_ALONE = node(health(inf=1, pos=1), (health(),))


def test_a_zero_made_on_one_replica_only_is_its_origin():
    origin = ONE_REPLICA.check(node(health(zero=1, pos=1), (health(),), ROOT_ALONE))
    assert origin is not None
    assert "held 1 exact zero in replica 1's copy only" in origin.why
    assert "replica 0's stayed finite" in origin.why
    assert origin.evidence[-1].startswith("Sum output on replica 1")


def test_not_one_replica_when_another_replica_went_non_finite_too():
    root = node(health(inf=1, pos=1), (health(inf=1, pos=1),))
    assert ONE_REPLICA.check(node(health(zero=1, pos=1), (health(),), root)) is None


def test_not_one_replica_when_the_copies_hold_the_same_kind_of_values():
    both = node(health(zero=1, pos=1), (health(zero=1, pos=1),), ROOT_ALONE)
    assert ONE_REPLICA.check(both) is None
    larger = node(health(max_abs=50.0), (health(max_abs=3.0),), ROOT_ALONE)
    assert ONE_REPLICA.check(larger) is None  # under REPLICA_MAGNITUDE_GAP x


def test_magnitudes_far_beyond_the_other_replicas_are_named():
    origin = ONE_REPLICA.check(node(health(max_abs=4e4), (health(max_abs=3.0),), ROOT_ALONE))
    assert origin is not None and "values up to 4e+04 (the others' at most 3)" in origin.why


def test_an_op_that_is_not_replicated_is_no_replica_origin():
    plain = ChainNode("Sum", "Sum", health(zero=1, pos=1), "float32", (), root=ROOT_ALONE)
    assert ONE_REPLICA.check(plain) is None


@pytest.mark.parametrize(
    ("values", "start"),
    [
        pytest.param([0.01 * 2**i for i in range(9)], 0, id="doubling to the end"),
        pytest.param([0.5, 0.1, 0.2, 0.4, 0.8], 1, id="rising since the drop"),
        pytest.param([0.0, 0.1, 0.2, 0.3], 1, id="warm-up from 0"),
        pytest.param([0.05, 0.1, 0.2, 0.4, 0.8, 0.8, 0.8], None, id="warm-up that ended"),
        pytest.param([0.1, 0.2, 0.4, 0.8, 0.7], None, id="fell at the end"),
        pytest.param([0.1, 0.2], None, id="too few values"),
        pytest.param([1.0, 1.1, 1.2, 1.3], None, id="rose too little"),
        pytest.param([], None, id="no values"),
    ],
)
def test_a_rise_counts_only_when_it_reaches_the_last_value(values, start):
    assert rise_start(values) == start
