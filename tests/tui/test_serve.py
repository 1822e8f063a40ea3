"""`tfdbg-tui serve`, without a browser: the token on every route, an app per
websocket that ends with it, and bad input (a port in use, a host it cannot bind, a
missing logdir) as one line and a status. The browser itself:
tests/tui/test_serve_browser.py."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.synthetic import write_nan_dump
from tests.tui.served_debugger import REPO, ServedDebugger, poll_until
from tfdbg_tui.commands import serve
from tfdbg_tui.commands.app_main import app_arguments
from tfdbg_tui.commands.app_main import build_parser as app_parser
from tfdbg_tui.exit_codes import EXIT_CANNOT_SERVE, EXIT_NO_DUMP, EXIT_USAGE

aiohttp = pytest.importorskip(
    "aiohttp", reason="the browser view's tests need the web extra (textual-serve)"
)
pytest.importorskip(
    "textual_serve", reason="the browser view's tests need the web extra (textual-serve)"
)

ROUTES = ("/", "/ws", "/static/js/textual.js", "/static/", "/download/anything")


def status_of(url: str, cookie: str | None = None) -> tuple[int, bytes, str | None]:
    """GET ``url``: its status, its body and the cookie it sets."""
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), response.headers.get("Set-Cookie")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), None


def tfdbg_tui(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run(
        [sys.executable, "-m", "tfdbg_tui.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_every_route_refuses_a_request_without_the_token_and_logs_it(nan_logdir):
    served = ServedDebugger(nan_logdir)
    try:
        for route in ROUTES:
            status, body, cookie = status_of(served.base + route)
            assert status == 403, route
            assert b"token" in body and b"textual" not in body.lower() and cookie is None
            status, _, _ = status_of(f"{served.base}{route}?token=not-{served.token}")
            assert status == 403, route
        served.poll(lambda: len(served.stderr) >= 2 * len(ROUTES), "the log of refusals")
        refusals = [line for line in served.stderr if " refused " in line]
        assert refusals[0] == "tfdbg-tui serve: refused GET / from 127.0.0.1: no token\n"
        assert refusals[1].endswith(": a wrong token\n")
        assert len(refusals) == 2 * len(ROUTES)
        assert not served.apps()  # no app was started for them

        # With the token the page comes, and its cookie lets the page's own requests in.
        status, page, cookie = status_of(served.url)
        assert status == 200 and b"textual-terminal" in page and cookie is not None
        name, value = cookie.split(";")[0].split("=", 1)
        port = served.base.rsplit(":", 1)[1]
        assert name == f"tfdbg-tui-token-{port}" and value == served.token
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert status_of(served.base + "/static/js/textual.js", f"{name}={value}")[0] == 200
        wrong = f"{name}={served.token[:-1]}x"
        assert status_of(served.base + "/static/js/textual.js", wrong)[0] == 403
    finally:
        assert served.stop() == 0


async def test_each_websocket_runs_its_own_app_with_the_options_and_closing_ends_it(tmp_path):
    # The app's command line goes through a shell: a logdir's name is never read by it.
    nan_logdir = tmp_path / "a logdir; $(touch shell-ran) `touch shell-ran`"
    write_nan_dump(nan_logdir)
    run_id = os.listdir(nan_logdir)[0]
    served = ServedDebugger(nan_logdir, "--run", run_id[:12], cwd=tmp_path)
    cookie = {f"tfdbg-tui-token-{served.base.rsplit(':', 1)[1]}": served.token}
    websocket_url = served.base.replace("http", "ws") + "/ws?width=100&height=30"
    try:
        async with aiohttp.ClientSession(cookies=cookie) as session:
            with pytest.raises(aiohttp.WSServerHandshakeError):
                async with aiohttp.ClientSession() as stranger:
                    await stranger.ws_connect(websocket_url)
            first = await session.ws_connect(websocket_url)
            second = await session.ws_connect(websocket_url)
            for tab in (first, second):  # each app draws its screen
                message = await asyncio.wait_for(tab.receive(), 60)
                assert message.type == aiohttp.WSMsgType.BINARY
            apps = served.apps()
            assert len(apps) == 2
            for pid in apps:  # the app's own command line: LOGDIR and --run
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
                assert argv[-3:] == [str(nan_logdir).encode(), b"--run", run_id[:12].encode()]
            assert not (tmp_path / "shell-ran").exists()
            await first.close()
            await poll_until(lambda: len(served.apps()) == 1, "the first tab's app to end")
            assert served.apps()[0] in apps
            # Ctrl+C on the server ends the app of the tab still open.
            assert served.stop() == 0
            await poll_until(lambda: not served.apps(), "the second tab's app to end")
            await second.close()
    finally:
        served.stop()


def test_a_port_in_use_is_one_line_and_a_status(nan_logdir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = tfdbg_tui("serve", str(nan_logdir), "--port", str(port))
    assert done.returncode == EXIT_CANNOT_SERVE
    assert done.stderr == (
        f"tfdbg-tui serve: cannot listen on 127.0.0.1:{port}: address already in use\n"
    )
    assert "http://" not in done.stdout


@pytest.mark.parametrize(
    "host",
    ["192.0.2.1", "no-such-host.invalid"],
    ids=["an-address-of-another-machine", "a-name-that-does-not-resolve"],
)
def test_a_host_it_cannot_bind_is_one_line_and_a_status(nan_logdir, host):
    done = tfdbg_tui("serve", str(nan_logdir), "--host", host, "--port", "0")
    assert done.returncode == EXIT_CANNOT_SERVE, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tfdbg-tui serve: cannot listen on {host}:0: ")
    assert "Traceback" not in done.stderr and "http://" not in done.stdout


def test_a_port_out_of_range_is_a_bad_command_line(nan_logdir):
    done = tfdbg_tui("serve", str(nan_logdir), "--port", "70000")
    assert done.returncode == EXIT_USAGE
    assert done.stderr == "tfdbg-tui serve: --port 70000 is not a port (0 to 65535)\n"


@pytest.mark.parametrize(
    "name", ["missing", "file", "empty"], ids=["a-missing-logdir", "a-file", "an-empty-logdir"]
)
def test_a_logdir_the_app_refuses_is_refused_with_the_same_line_and_status(tmp_path, name):
    path = tmp_path / name
    if name == "file":
        path.write_text("not a dump")
    elif name == "empty":
        path.mkdir()
    app = tfdbg_tui(str(path))
    served = tfdbg_tui("serve", str(path), "--port", "0")
    assert app.returncode == served.returncode == EXIT_NO_DUMP
    assert served.stderr == app.stderr and served.stderr.count("\n") == 1
    assert served.stdout == ""


def test_a_host_beyond_this_machine_is_warned_about_in_one_line(nan_logdir):
    served = ServedDebugger(nan_logdir, "--host", "0.0.0.0")
    try:
        served.poll(lambda: any("listening on" in line for line in served.stderr), "the warning")
        warnings = [line for line in served.stderr if "listening on" in line]
        assert len(warnings) == 1 and "not on this machine alone" in warnings[0]
        assert served.url.startswith(f"http://{socket.gethostname()}:")
        assert any(line.strip().startswith("ssh -L ") for line in served.stdout)
    finally:
        served.stop()


def test_the_url_and_the_port_forward_are_printed_for_loopback_without_a_warning(nan_logdir):
    served = ServedDebugger(nan_logdir)
    try:
        port = served.base.rsplit(":", 1)[1]
        assert served.base == f"http://127.0.0.1:{port}"
        assert len(served.token) >= 40  # 32 random bytes, URL-safe
        assert f"    ssh -L {port}:localhost:{port} {socket.gethostname()}\n" in served.stdout
        time.sleep(0.2)
        assert served.stderr == []
    finally:
        served.stop()


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--run", "20260101T000000-host-1"],
        ["--compare", "/runs/good", "--name-a", "good", "--name-b", "bad"],
        ["--wait", "--no-mouse"],
    ],
    ids=["none", "run", "compare", "wait"],
)
def test_a_tab_runs_the_app_with_every_option_serve_was_given(options):
    parsed = serve.build_parser().parse_args(["/logs", "--port", "0", *options])
    argv = app_arguments(parsed)
    assert argv == ["/logs", *options]
    assert vars(app_parser().parse_args(argv)) == {
        key: value for key, value in vars(parsed).items() if key not in ("port", "host")
    }


@pytest.mark.parametrize("option", ["--pdb", "--json", "--no-open"])
def test_run_serve_refuses_what_a_browser_cannot_reach_before_the_program_runs(tmp_path, option):
    marker = tmp_path / "ran"
    program = tmp_path / "program.py"
    program.write_text(f"open({str(marker)!r}, 'w').close()\n")
    done = tfdbg_tui("run", "--serve", option, "--", "python", str(program))
    assert done.returncode == EXIT_USAGE
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tfdbg-tui run: {option} ")
    assert not marker.exists()
