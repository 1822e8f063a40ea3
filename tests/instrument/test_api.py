"""Argument checks that run before TensorFlow is imported, and the import boundary."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import instrument
from instrument.tracing.stacks import is_library_file


def test_unknown_mode_is_a_clear_value_error(tmp_path):
    with pytest.raises(ValueError, match="unknown tensor_debug_mode 'FULL_HELTH'.*FULL_HEALTH"):
        instrument.enable_dump_debug_info(tmp_path, tensor_debug_mode="FULL_HELTH")


def test_unwritable_logdir_is_a_clear_os_error(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(OSError, match="cannot create the dump logdir"):
        instrument.enable_dump_debug_info(blocker / "logdir")


def test_bad_filters_are_value_errors(tmp_path):
    with pytest.raises(ValueError, match="op_regex"):
        instrument.enable_dump_debug_info(tmp_path, op_regex="(")
    with pytest.raises(ValueError, match="tensor_dtypes"):
        instrument.enable_dump_debug_info(tmp_path, tensor_dtypes="float32")


def test_disable_without_enable_does_nothing():
    instrument.disable_dump_debug_info()


def test_import_does_not_import_tensorflow():
    code = (
        "import sys, instrument, instrument.dump.writer; "
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_library_files():
    assert is_library_file(os.__file__)
    assert is_library_file(instrument.__file__)
    assert not is_library_file(
        os.path.join(os.path.dirname(instrument.__file__), "examples", "debug_mnist.py")
    )
    assert not is_library_file("/home/user/train.py")


@pytest.mark.parametrize("mode", ["NO_TENSOR", "SHAPE"])
def test_stop_on_alert_without_values_is_a_value_error(tmp_path, mode):
    with pytest.raises(ValueError, match=f"stop_on_alert needs .*{mode}"):
        instrument.enable_dump_debug_info(tmp_path, tensor_debug_mode=mode, stop_on_alert=True)
