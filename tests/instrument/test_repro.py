"""The proof of a fix and `tfdbg-tui repro`, on real FULL_TENSOR dumps
(tests/programs/proof.py): the culprit rerun on its stored inputs as it ran and with
the fixed line, and the one-op script run in a fresh process."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import reader
from instrument.repro.op_fixes import OP_CALLS
from instrument.repro.proof import Proof, prove
from instrument.repro.script import INPUTS_NAME, SCRIPT_NAME, ReproError, write_repro
from reader.analysis.diagnosis.culprit_values import CulpritValues, StoredTensor, culprit_values
from reader.analysis.diagnosis.fixes import fixed_call, proof_fix
from tests.conftest import REPO
from tests.present import present
from tfdbg_tui.exit_codes import EXIT_NO_DUMP, EXIT_NO_REPRO

pytestmark = pytest.mark.tf

# case -> (op type, the rerun's counts as it ran, the fixed line's size).
PROOF_CASES = {
    "log_zero": ("Log", {"size": 1000, "nan": 0, "neg_inf": 100, "pos_inf": 0}),
    "log1p_below": ("Log1p", {"size": 4, "nan": 1, "neg_inf": 0, "pos_inf": 0}),
    "sqrt_negative": ("Sqrt", {"size": 3, "nan": 1, "neg_inf": 0, "pos_inf": 0}),
    "div_zero": ("RealDiv", {"size": 2, "nan": 0, "neg_inf": 0, "pos_inf": 1}),
    "pow_negative": ("Pow", {"size": 3, "nan": 1, "neg_inf": 0, "pos_inf": 0}),
    "acos_domain": ("Acos", {"size": 3, "nan": 1, "neg_inf": 0, "pos_inf": 0}),
    "exp_overflow": ("Exp", {"size": 3, "nan": 0, "neg_inf": 0, "pos_inf": 1}),
    "norm_grad": ("SqrtGrad", {"size": 1, "nan": 0, "neg_inf": 0, "pos_inf": 1}),
    "log_bfloat16": ("Log", {"size": 3, "nan": 0, "neg_inf": 1, "pos_inf": 0}),
    "eager_log": ("Log", {"size": 2, "nan": 0, "neg_inf": 1, "pos_inf": 0}),
}


def _env() -> dict[str, str]:
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _tfdbg(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=300,
    )


def _values(proof_dumps: str, case: str) -> CulpritValues:
    with reader.open_run(os.path.join(proof_dumps, case)) as dump:
        cause = dump.root_cause()
        assert cause is not None
        return culprit_values(dump, cause)


@pytest.mark.parametrize("case", sorted(PROOF_CASES))
def test_the_proof_reruns_the_op_and_its_fixed_line(proof_dumps, case):
    op_type, original = PROOF_CASES[case]
    values = _values(proof_dumps, case)
    assert values.op_type == op_type and values.missing is None
    # The stored output is what the rerun makes again.
    assert values.output.value is not None
    stored = values.output.value
    assert int(np.isnan(stored).sum()) == original["nan"]
    proof = prove(values)
    assert proof.original == original, proof.text()
    assert proof.fixed == {"size": original["size"], "nan": 0, "neg_inf": 0, "pos_inf": 0}
    assert proof.holds
    # The fixed line is the fix table's computation for the op's family.
    assert proof.fixed_line == fixed_call(
        present(proof_fix(op_type, values.op_name)), OP_CALLS[op_type]
    )
    assert proof.text().endswith(f"all {original['size']} finite")


def test_report_shows_the_proof(proof_dumps):
    logdir = os.path.join(proof_dumps, "log_zero")
    done = _tfdbg("report", logdir, "--json")
    assert done.returncode == 0, done.stderr
    proof = json.loads(done.stdout)["diagnosis"]["proof"]
    assert proof["holds"] is True and proof["missing"] is None
    assert proof["text"] == (
        "`tf.math.log(x0)`: -inf in 100 of 1000 -> "
        "`tf.math.log(tf.maximum(x0, 1e-07))`: all 1000 finite"
    )
    human = _tfdbg("report", logdir)
    assert "Proof: `tf.math.log(x0)`: -inf in 100 of 1000 -> " in human.stdout
    skipped = json.loads(_tfdbg("report", logdir, "--json", "--no-proof").stdout)
    assert skipped["diagnosis"]["proof"] is None


def test_without_values_the_proof_names_the_mode_in_one_line(proof_dumps):
    done = _tfdbg("report", os.path.join(proof_dumps, "log_summary"), "--json")
    proof = json.loads(done.stdout)["diagnosis"]["proof"]
    assert proof["holds"] is False and proof["original"] is None
    assert proof["missing"].startswith("no values: this run recorded FULL_HEALTH summaries")
    assert "FULL_TENSOR" in proof["missing"] and "\n" not in proof["missing"]


def test_repro_script_reproduces_in_a_fresh_process_and_the_fixed_line_does_not(
    proof_dumps, tmp_path
):
    out = str(tmp_path / "bug")
    done = _tfdbg("repro", os.path.join(proof_dumps, "log_zero"), "-o", out)
    assert done.returncode == 0, done.stderr
    assert "fixed line: tf.math.log(tf.maximum(x0, 1e-07))" in done.stdout
    assert sorted(os.listdir(out)) == [SCRIPT_NAME, INPUTS_NAME]
    script = os.path.join(out, SCRIPT_NAME)
    ran = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, env=_env(), cwd=tmp_path
    )
    assert ran.returncode == 1, ran.stderr
    assert ran.stdout.splitlines()[-1] == "tf.math.log(x0): -inf in 100 of 1000"
    assert "proof.py:" in ran.stdout  # the about line: which op of which run
    fixed = subprocess.run(
        [sys.executable, script, "--fixed"], capture_output=True, text=True, env=_env()
    )
    assert fixed.returncode == 0, fixed.stderr
    assert fixed.stdout.splitlines()[-1] == "tf.math.log(tf.maximum(x0, 1e-07)): all 1000 finite"


def test_repro_of_a_compiled_op_runs_it_with_xla(proof_dumps, tmp_path):
    """An op that ran inside a jit_compile function is rerun compiled; XLA keeps the
    op's -inf and the fixed line's finiteness."""
    values = dataclasses.replace(_values(proof_dumps, "log1p_below"), compiled=True)
    files = write_repro(values, str(tmp_path), about="compiled")
    with open(files.script, encoding="utf-8") as f:
        assert "COMPILED = True" in f.read()
    ran = subprocess.run(
        [sys.executable, files.script, "--json"], capture_output=True, text=True, env=_env()
    )
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout.splitlines()[-1])
    assert found["original"]["nan"] == 1 and found["fixed"]["nan"] == 0
    assert prove(values).holds


def test_an_op_compiled_with_xla_is_known_compiled_on_a_real_dump(proof_dumps, tmp_path):
    """A log in a real ``tf.function(jit_compile=True)``, traced in FULL_HEALTH: the
    culprit is known to have run compiled, and, as FULL_TENSOR records no value inside
    XLA, the proof and `repro` say in one line how to get the values (the function
    run without XLA), not only "record in FULL_TENSOR"."""
    values = _values(proof_dumps, "log_xla")
    assert (values.op_type, values.compiled) == ("Log", True)
    proof = prove(values)
    assert proof.compiled and not proof.holds and proof.original is None
    missing = present(proof.missing)
    assert "compiled with XLA" in missing and "jit_compile=False" in missing
    assert "\n" not in missing
    refused = _tfdbg("repro", os.path.join(proof_dumps, "log_xla"), cwd=str(tmp_path))
    assert refused.returncode == EXIT_NO_REPRO
    assert "jit_compile=False" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert os.listdir(tmp_path) == []
    # In FULL_TENSOR the compiled function's insides are not recorded: the root cause
    # is its call, and the proof says why it has no values of the op inside.
    call = _values(proof_dumps, "log_xla_tensor")
    assert call.op_type.startswith("__inference_loss")
    assert "compiled with XLA" in present(call.missing)
    assert "jit_compile=False" in present(prove(call).missing)


def test_repro_refuses_in_one_line(proof_dumps, tmp_path):
    no_values = _tfdbg("repro", os.path.join(proof_dumps, "log_summary"), cwd=str(tmp_path))
    assert no_values.returncode == EXIT_NO_REPRO
    assert no_values.stderr.startswith("tfdbg-tui repro: no values: this run recorded")
    assert len(no_values.stderr.strip().splitlines()) == 1
    no_alert = _tfdbg("repro", os.path.join(proof_dumps, "log_zero"), "--alert", "99")
    assert no_alert.returncode == EXIT_NO_REPRO
    assert no_alert.stderr.startswith("tfdbg-tui repro: no alert 99: the run lists")
    missing = _tfdbg("repro", str(tmp_path / "nowhere"))
    assert missing.returncode == EXIT_NO_DUMP and "Traceback" not in missing.stderr
    assert os.listdir(tmp_path) == []


def test_nothing_of_the_dump_is_written_as_code(tmp_path):
    """The op's name, the run and the line go to the .npz as text; the op type must be
    one of the table's; a dtype outside the known ones is refused."""
    hostile = 'x"""\nimport os; os.system("echo owned")\n#'
    value = np.array([0.0, 1.0], np.float32)
    values = CulpritValues(
        "Log", hostile, (StoredTensor(hostile, "float32", value),),
        StoredTensor(hostile, "float32", None), False, None,
    )  # fmt: skip
    files = write_repro(values, str(tmp_path), about=hostile)
    with open(files.script, encoding="utf-8") as f:
        script = f.read()
    assert "owned" not in script and "os.system" not in script
    assert str(np.load(files.inputs)["about"]) == hostile
    with pytest.raises(ReproError, match="no one-op reproduction for Log_evil"):
        write_repro(dataclasses.replace(values, op_type="Log_evil"), str(tmp_path), "")
    strange = dataclasses.replace(values, inputs=(StoredTensor("x", "float32); evil(", value),))
    with pytest.raises(ReproError, match="a reproduction takes float16"):
        write_repro(strange, str(tmp_path), "")


def test_the_proof_in_one_line():
    bad = {"size": 1000, "nan": 0, "neg_inf": 100, "pos_inf": 0}
    good = {"size": 1000, "nan": 0, "neg_inf": 0, "pos_inf": 0}
    proof = Proof("Log", "tf.math.log(x0)", "tf.math.log(tf.maximum(x0, 1e-07))", bad, good)
    assert proof.holds
    assert proof.text() == (
        "`tf.math.log(x0)`: -inf in 100 of 1000 -> "
        "`tf.math.log(tf.maximum(x0, 1e-07))`: all 1000 finite"
    )
    still = dataclasses.replace(proof, fixed={**good, "nan": 2}, compiled=True)
    assert not still.holds and still.text().endswith("NaN in 2 of 1000 (compiled with XLA)")
    finite = dataclasses.replace(proof, original=good)
    assert not finite.holds
    assert (
        finite.text()
        == "not reproduced: `tf.math.log(x0)` on the stored inputs made all 1000 finite"
    )
    missing = Proof("Log", missing="no values: this run recorded FULL_HEALTH summaries only")
    assert missing.text() == "not proven: no values: this run recorded FULL_HEALTH summaries only"
    assert missing.as_dict()["holds"] is False


def test_a_bfloat16_op_is_rerun_in_bfloat16(proof_dumps, tmp_path):
    """bfloat16 values are stored as float32; the script casts them back to the dtype
    the op declared, so the rerun rounds as the program did."""
    values = _values(proof_dumps, "log_bfloat16")
    assert [t.dtype for t in values.inputs] == ["bfloat16"] and values.output.dtype == "bfloat16"
    files = write_repro(values, str(tmp_path), about="bfloat16")
    stored = np.load(files.inputs)
    assert str(stored["dtype0"]) == "bfloat16" and stored["x0"].dtype == np.float32
