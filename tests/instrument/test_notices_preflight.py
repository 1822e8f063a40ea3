"""Preflight notices from the process's settings, without TensorFlow: a stand-in `tf`
and Keras module say what the real ones would."""

from __future__ import annotations

import sys
import threading
import types

import pytest

from instrument.notices import NoticeBoard, preflight, recheck_settings
from reader import format as fmt


class RecordingWriter:
    def __init__(self):
        self.notices = []

    def add_notice(self, kind, message, *, level, details):
        self.notices.append((kind, level, details, message))


def fake_tf(jit="", eagerly=False):
    config = types.SimpleNamespace(
        optimizer=types.SimpleNamespace(get_jit=lambda: jit), functions_run_eagerly=lambda: eagerly
    )
    return types.SimpleNamespace(config=config)


def fake_keras(policy):
    mixed = types.SimpleNamespace(global_policy=lambda: types.SimpleNamespace(name=policy))
    return types.SimpleNamespace(mixed_precision=mixed)


def test_each_setting_is_a_notice_once(monkeypatch):
    monkeypatch.setitem(sys.modules, "keras", fake_keras("mixed_float16"))
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    writer = RecordingWriter()
    board = NoticeBoard(writer)
    preflight(
        board,
        fake_tf(jit="autoclustering", eagerly=True),
        circular_buffer_size=1000,
        op_regex="^MatMul$",
        tensor_dtypes=["float32"],
    )
    preflight(
        board,
        fake_tf(jit="autoclustering", eagerly=True),
        circular_buffer_size=1000,
        op_regex="^MatMul$",
        tensor_dtypes=["float32"],
    )
    kinds = {kind: (level, details) for kind, level, details, _ in writer.notices}
    assert len(writer.notices) == len(kinds)  # once each
    assert kinds == {
        fmt.NOTICE_XLA_AUTO_CLUSTERING: (
            "info",
            {"setting": "tf.config.optimizer.set_jit: autoclustering"},
        ),
        fmt.NOTICE_FUNCTIONS_RUN_EAGERLY: ("info", {}),
        fmt.NOTICE_MIXED_PRECISION: ("info", {"policy": "mixed_float16"}),
        fmt.NOTICE_FILTERS: ("info", {"op_regex": "^MatMul$", "tensor_dtypes": ["float32"]}),
        fmt.NOTICE_CIRCULAR_BUFFER: ("info", {"size": 1000}),
    }


def test_defaults_make_no_notice_and_the_flag_route_is_seen(monkeypatch):
    monkeypatch.setitem(sys.modules, "keras", fake_keras("float32"))
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit")
    writer = RecordingWriter()
    preflight(
        NoticeBoard(writer), fake_tf(), circular_buffer_size=-1, op_regex=None, tensor_dtypes=None
    )
    assert [kind for kind, *_ in writer.notices] == [fmt.NOTICE_XLA_AUTO_CLUSTERING]
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    writer = RecordingWriter()
    preflight(
        NoticeBoard(writer), fake_tf(), circular_buffer_size=-1, op_regex=None, tensor_dtypes=None
    )
    assert writer.notices == []


def test_a_policy_set_after_enable_is_noticed_at_the_first_call(monkeypatch):
    monkeypatch.setitem(sys.modules, "keras", fake_keras("float32"))
    monkeypatch.setitem(sys.modules, "tensorflow", fake_tf())
    writer = RecordingWriter()
    board = NoticeBoard(writer)
    recheck_settings(board)
    assert writer.notices == []
    monkeypatch.setitem(sys.modules, "keras", fake_keras("mixed_bfloat16"))
    recheck_settings(board)
    assert [(k, d) for k, _, d, _ in writer.notices] == [
        (fmt.NOTICE_MIXED_PRECISION, {"policy": "mixed_bfloat16"})
    ]


@pytest.mark.parametrize("seen", [False, True])
def test_threads_running_at_enable_are_a_warning_unless_reached(seen):
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="loader")
    worker.start()
    try:
        writer = RecordingWriter()
        preflight(
            NoticeBoard(writer),
            fake_tf(),
            circular_buffer_size=-1,
            op_regex=None,
            tensor_dtypes=None,
            running_threads_seen=seen,
        )
    finally:
        stop.set()
        worker.join()
    found = [
        (level, details)
        for kind, level, details, _ in writer.notices
        if kind == fmt.NOTICE_THREADS_BEFORE_ENABLE
    ]
    assert found == ([] if seen else [("warning", {"threads": ["loader"]})])


@pytest.mark.parametrize(
    ("policy", "says", "never"),
    [
        ("mixed_float16", ("float16", "65504"), ("bfloat16", "significant bits")),
        ("mixed_bfloat16", ("bfloat16", "float32's range", "8 significant bits"), ("65504",)),
    ],
    ids=["float16-range", "bfloat16-precision"],
)
def test_the_mixed_precision_notice_says_what_is_true_of_its_dtype(
    monkeypatch, policy, says, never
):
    """float16's hazard is its range; bfloat16 has float32's range, its hazard is
    rounding (8 significant bits): each notice names its own."""
    monkeypatch.setitem(sys.modules, "keras", fake_keras(policy))
    monkeypatch.setitem(sys.modules, "tensorflow", fake_tf())
    writer = RecordingWriter()
    recheck_settings(NoticeBoard(writer))
    [(kind, _, _, message)] = writer.notices
    assert kind == fmt.NOTICE_MIXED_PRECISION
    assert all(word in message for word in says), message
    assert not any(word in message for word in never), message
