"""`tfdbg-tui serve LOGDIR [--port N] [--host H] [APP OPTIONS]` (and `run --serve`): the
same debugger in a browser. Checks the logdir as `app_main` does, prints the URL with
its token and the `ssh -L` port forward, warns when the host is not loopback; a port
or host it cannot listen on is one line and status 10.

The logdir is checked as the app checks it (`app_main.check_logdir`: the same one-line
errors and statuses), then the page is served by `PrivateServer` (the `web` extra).
Each browser tab runs the app's own command line (`app_main.app_arguments`: every
option of the app) in a process of its own, which ends when the tab closes. It binds
127.0.0.1 unless `--host` says otherwise (then it warns), and every URL carries a
random token. A port or host that cannot be listened on prints one line and exits
`EXIT_CANNOT_SERVE`.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from tfdbg_tui import exit_codes as codes
from tfdbg_tui.commands.app_main import add_app_options, app_arguments, check_logdir

PROG = "tfdbg-tui serve"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 6070
# Hosts that only this machine can reach: no warning.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
# Hosts that mean every address of this machine: the URL names the machine instead.
WILDCARD_HOSTS = ("0.0.0.0", "::", "")
EPILOG = f"""Open the URL it prints. From a laptop, forward the port first (the command
it prints: ssh -L N:localhost:N HOST). Each browser tab gets its own app; closing the
tab ends it; Ctrl+C stops serving.

exit status: {codes.EXIT_OK} ok, {codes.EXIT_USAGE} bad command line, {codes.EXIT_NO_DUMP}/\
{codes.EXIT_NEWER_FORMAT}/{codes.EXIT_DAMAGED} as for `tfdbg-tui LOGDIR`,
{codes.EXIT_CANNOT_SERVE} the port or host cannot be listened on, or the web extra is not
installed (pip install "tfdbg-tui[web]")."""


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """`--port` and `--host` (`serve`, and `run --serve`)."""
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        metavar="N",
        help=f"port to serve on (default {DEFAULT_PORT}; 0: any free port)",
    )
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        metavar="H",
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; "
        "another one is warned about)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve the debugger on a local port, to open in a browser: the same "
        "app, keys and panes as in the terminal.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_app_options(parser)
    add_serve_options(parser)
    return parser


def main(argv: list[str]) -> int:
    """Entry point of `tfdbg-tui serve`; returns the exit status (see `EPILOG`)."""
    args = build_parser().parse_args(argv)
    if not 0 <= args.port <= 65535:
        say(f"--port {args.port} is not a port (0 to 65535)")
        return codes.EXIT_USAGE
    status, _ = check_logdir(args)
    if status != codes.EXIT_OK:
        return status
    try:
        from tfdbg_tui.commands.private_server import CannotListen, PrivateServer
    except ImportError as error:
        say(f'it needs the web extra ({error.name} is missing): pip install "tfdbg-tui[web]"')
        return codes.EXIT_CANNOT_SERVE
    import asyncio
    import logging
    import secrets

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
    for name, level in (("tfdbg_tui.serve", logging.INFO), ("textual-serve", logging.ERROR)):
        logger = logging.getLogger(name)
        logger.addHandler(handler)
        logger.setLevel(level)
        logger.propagate = False

    token = secrets.token_urlsafe(32)
    command = shlex.join([sys.executable, "-m", "tfdbg_tui.cli", *app_arguments(args)])
    server = PrivateServer(command, token)
    try:
        asyncio.run(server.run(args.host, args.port, lambda port: announce(args, port, token)))
    except CannotListen as error:
        say(f"cannot listen on {where(args.host, args.port)}: {error}")
        return codes.EXIT_CANNOT_SERVE
    return codes.EXIT_OK


def announce(args: argparse.Namespace, port: int, token: str) -> None:
    """Print the URL to open and the port forward to use from a laptop; warn in one line
    when the host is not this machine's loopback."""
    import socket

    from tfdbg_tui.text.literal import literal

    machine = socket.gethostname()
    if args.host not in LOOPBACK_HOSTS:
        say(
            f"listening on {where(args.host, port)}, not on this machine alone: whoever "
            "reaches it with the URL's token sees your source code"
        )
    shown = machine if args.host in WILDCARD_HOSTS else args.host
    print(f"{PROG}: the debugger of {literal(args.logdir)} is at")
    print(f"    http://{where(shown, port)}/?token={token}")
    print("From a laptop, forward the port, then open the URL there:")
    print(f"    ssh -L {port}:localhost:{port} {machine}")
    print("Each browser tab gets its own app; closing it ends the app. Ctrl+C stops serving.")
    sys.stdout.flush()


def where(host: str, port: int) -> str:
    """``host:port``, an IPv6 address in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def say(text: str) -> None:
    """One line of ours on stderr."""
    print(f"{PROG}: {text}", file=sys.stderr, flush=True)
