"""The exact expression of a frame whose span is a whole compound statement."""

from __future__ import annotations

import pytest

from reader.analysis.diagnosis.expressions import expression_text, line_span
from reader.model import Frame
from tests.present import present


def _frame(column: int, end_line: int, end_column: int) -> Frame:
    return Frame(
        id=0,
        file_id=0,
        path="train.py",
        line=1,
        function="main",
        is_user=True,
        column=column,
        end_line=end_line,
        end_column=end_column,
    )


@pytest.mark.parametrize(
    "header, expression",
    [
        ("    for x, y in dataset.batch(4):  # the data", "dataset.batch(4)"),
        ("    async for x in stream():", "stream()"),
        ("    while step < limit:", "step < limit"),
        ("    with tf.GradientTape() as tape:  # é", "tf.GradientTape()"),
    ],
)
def test_a_block_header_spans_its_own_expression(header, expression):
    """The span of a `for` (FOR_ITER) covers the whole loop; the expression is the
    header's iterable, test or context manager, without its comment or body."""
    lines = (header, "        train_step(x, y)")
    frame = _frame(4, 2, 24)
    start, end = present(line_span(frame, header))
    assert header[start:end] == expression
    assert expression_text(frame, lines) == expression


def test_a_call_over_several_lines_is_joined():
    lines = ("    loss = compute(a,", "                   b)")
    frame = _frame(11, 2, 21)
    assert expression_text(frame, lines) == "compute(a, b)"
    assert line_span(frame, lines[0]) == (11, len(lines[0]))


def test_a_comment_on_a_calls_lines_is_not_part_of_it():
    """``from_generator(  # stream the export``: the comments of a call over several
    lines are left out of its expression and of its carets; a `#` in a string stays."""
    lines = (
        "    data = tf.data.Dataset.from_generator(  # stream the export",
        "        rows,  # one row a record",
        '        output_signature=spec("#"))',
    )
    frame = _frame(11, 3, 35)
    assert expression_text(frame, lines) == (
        'tf.data.Dataset.from_generator( rows, output_signature=spec("#"))'
    )
    start, end = present(line_span(frame, lines[0]))
    assert lines[0][start:end] == "tf.data.Dataset.from_generator("
