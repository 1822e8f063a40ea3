"""An S3-compatible server on 127.0.0.1 for the bucket tests: moto's standalone
server (`pip install "moto[server]" s3fs`), started and stopped here, driven through
s3fs. Every test that asks for it is skipped, with the reason, where it cannot start.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.program_runs import free_ports

START_TIMEOUT_S = 30.0


@dataclass
class S3Server:
    """A running server: its endpoint and the environment that points clients at it."""

    endpoint: str
    process: subprocess.Popen

    def env(self, **overrides: str) -> dict[str, str]:
        """The environment of a client process (s3fs and botocore read it)."""
        return dict(
            os.environ,
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_DEFAULT_REGION="us-east-1",
            **overrides,
        )


def start_server(**env: str) -> S3Server:
    """Start moto's server on a free port; skip the test when it cannot start."""
    for module in ("moto", "flask", "s3fs"):
        try:
            __import__(module)
        except ImportError:
            pytest.skip(f'the S3 tests need {module}: pip install "moto[server]" s3fs')
    (port,) = free_ports(1)
    endpoint = f"http://127.0.0.1:{port}"
    # Its log goes to a file: a pipe nobody reads fills after some 64 KB of request
    # lines, and the server then blocks every request writing the next one.
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        env=dict(os.environ, **env),
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            error = log.read().decode(errors="replace")[-300:]
            pytest.skip(f"moto's S3 server did not start: {error}")
        try:
            urllib.request.urlopen(endpoint + "/moto-api/", timeout=1).close()
            return S3Server(endpoint, process)
        except OSError:
            time.sleep(0.05)
    process.kill()
    pytest.skip(f"moto's S3 server did not answer within {START_TIMEOUT_S:.0f} s")


@contextlib.contextmanager
def credentials_refused(server: S3Server) -> Iterator[None]:
    """Within the block, the server checks credentials and knows none: it refuses every
    request (moto's `/moto-api/reset-auth`; after the block it checks none again)."""
    _check_credentials_after(server, "0")
    try:
        yield
    finally:
        _check_credentials_after(server, "inf")


def _check_credentials_after(server: S3Server, requests: str) -> None:
    """Have the server check credentials after `requests` more requests."""
    urllib.request.urlopen(
        urllib.request.Request(
            server.endpoint + "/moto-api/reset-auth",
            data=requests.encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        ),
        timeout=10,
    ).close()


def stop_server(server: S3Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's server; this process's s3fs clients point at it."""
    server = start_server()
    saved = {k: os.environ.get(k) for k in server.env()}
    os.environ.update(server.env())
    cache = os.environ.get("TFDBG_TUI_CACHE_DIR")
    try:
        yield server
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        if cache is None:
            os.environ.pop("TFDBG_TUI_CACHE_DIR", None)
        stop_server(server)


@pytest.fixture(scope="session")
def _s3_admin(s3_server):
    """The session's s3fs client for the tests' own set-up and checks: making a client
    costs botocore 0.1-0.2 s. It caches no listing, so each look is the server's."""
    import s3fs

    return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)


@pytest.fixture
def bucket(_s3_admin, tmp_path, monkeypatch) -> str:
    """A new, empty bucket: its URL (``s3://<name>``). The object cache is the test's."""
    monkeypatch.setenv("TFDBG_TUI_CACHE_DIR", str(tmp_path / "object-cache"))
    from reader import object_store

    monkeypatch.setattr(object_store, "_STORES", {})  # a store with the test's cache
    name = f"test-{uuid.uuid4().hex[:12]}"
    _s3_admin.mkdir(name)
    return f"s3://{name}"


@pytest.fixture
def s3fs_client(_s3_admin):
    """An s3fs client on the session's server (not the reader's or the writer's)."""
    return _s3_admin
