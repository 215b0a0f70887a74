"""Serving from the command line: `daemon`, `serve`, `run` (the container entrypoint) and
`mcp-config` (what an agent pastes to reach the server)."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import logging
import os
import sys

from ssebench.core.cli.parser import EXIT_OK, MCP_PORT, PUBLIC_HOST
from ssebench.core.cli.requests import ServeRequest
from ssebench.core.cli.root import Root
from ssebench.core.cli.startup import loading
from ssebench.core.errors import ConfigError

DAEMON_HOST = "127.0.0.1"  # the embedded daemon: loopback only, whatever --host says
NAME = "ssebench"
CODEX_TOOL_TIMEOUT = 3600  # a call runs a whole build and test cycle
# Codex gives a server 10 s to answer initialize and tools/list. serve answers in 1-2 s, and
# `ssebench run` starts the agent only once it does; a minute covers a loaded machine while a
# server that is not there is still reported within one.
CODEX_STARTUP_TIMEOUT = 60


def is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def check_address(host: str, allow_remote: bool) -> None:
    """Loopback unless the user says otherwise: refused before anything else happens."""
    if not is_loopback(host) and not allow_remote:
        raise ConfigError(
            f"--host {host} is not a loopback address; pass --allow-remote to be reachable "
            "from other machines"
        )


def warn_remote(host: str, what: str) -> None:
    if not is_loopback(host):
        print(
            f"ssebench: warning: {what} on {host}, reachable from other machines; the Host and "
            "Origin checks stay on (--allowed-host adds names)",
            file=sys.stderr,
        )


def cmd_daemon(args: argparse.Namespace, root: Root) -> int:
    task, level = root.task, root.settings.difficulty
    assert task is not None  # --task is required
    check_address(args.host, args.allow_remote)
    with root.proving(), loading():  # refused in one line before a port is taken
        from ssebench.core.daemons.inprocess import http_adapter
        from ssebench.core.server.listen import bind_all, serve_all

    sockets = bind_all([(args.host, args.port, "--port")])  # in use: one line, nothing said
    root.announce()
    warn_remote(args.host, "serving the daemon (it runs the task's checks and serves their logs)")
    ready = (
        f"ssebench: daemon for {task.path} at http://{url_host(args.host)}:{args.port} "
        f"(difficulty {level})"
    )

    async def serving() -> None:
        async with root.open_daemon(level) as service:
            app = http_adapter(service, allowed_hosts=args.allowed_host)
            assert app is not None
            await serve_all([app], sockets, ready)

    asyncio.run(serving())
    return EXIT_OK


def serve_request(args: argparse.Namespace, root: Root) -> ServeRequest:
    """`serve`'s flags (of `serve`, or of `run`, which takes them all) as the request that
    serves them."""
    if args.task is not None and args.daemon_api is not None:
        raise ConfigError("--daemon-api is for sidecar mode; --task runs our own daemon")
    return ServeRequest(
        basis=root.basis, host=args.host, port=args.port, daemon_port=args.daemon_port,
        allow_remote=args.allow_remote, allowed_hosts=tuple(args.allowed_host),
    )  # fmt: skip


def check_serving(root: Root, request: ServeRequest) -> None:
    """Everything serve checks before it binds: the task, a daemon to talk to, the addresses.
    One line each."""
    if root.task is None:
        from ssebench.core.daemons.connect import daemon_location  # sidecar mode's clients

        if daemon_location(root.settings.daemon_url) is None:
            raise ConfigError(
                "serve needs --task DIR (embedded daemon), or a daemon to talk to: --daemon-url "
                "URL, SSE_DAEMON_URL, SSE_DAEMON_SOCKET or SSE_AGENT_DOCKER"
            )
    if root.task is not None and request.port == request.daemon_port:
        raise ConfigError(
            f"--port and --daemon-port are both {request.port}; the embedded daemon needs its own"
        )
    check_address(request.host, request.allow_remote)


def addresses(request: ServeRequest, embedded: bool) -> list[tuple[str, int, str]]:
    """Where serve listens, each with the flag that chose it: MCP, then an embedded daemon."""
    listen = [(request.host, request.port, "--port")]
    if embedded:
        where = "--daemon-port, the embedded daemon's port"
        listen.append((DAEMON_HOST, request.daemon_port, where))
    return listen


def cmd_serve(args: argparse.Namespace, root: Root) -> int:
    return serve(root, serve_request(args, root))


def serve(root: Root, request: ServeRequest) -> int:
    """Serve test_patch as `request` says: on sockets `ssebench run` handed over, else bound
    here; checked before the imports."""
    check_serving(root, request)
    task, settings = root.task, root.settings
    with root.proving(), loading():
        from ssebench.core.daemons.door import log_owner
        from ssebench.core.daemons.inprocess import http_adapter
        from ssebench.core.server import http
        from ssebench.core.server.listen import bind_all, handed_over

    logging.getLogger("ssebench").setLevel(logging.INFO)
    listen = addresses(request, task is not None)
    sockets = handed_over(listen) or bind_all(listen)
    root.announce()
    warn_remote(request.host, "serving test_patch")
    where = "sidecar mode"
    if task is not None:
        where = f"task {task.path}, daemon at http://{DAEMON_HOST}:{request.daemon_port}"
    url = f"http://{url_host(request.host)}:{request.port}{http.MCP_PATH}"
    on_call = None
    if request.calls is not None:  # `run --prediction-out` keeps what each call said
        from ssebench.core.calls import CallLog

        on_call = CallLog(request.calls, settings.difficulty)
    serving = http.Serving(
        tuple(root.registry.checks),
        settings.difficulty,
        settings.log_dir,
        log_owner=None if task is None else log_owner(task.source),
        progress_interval=settings.progress_interval,
        allowed_hosts=request.allowed_hosts,
        on_call=on_call,
    )
    ready = f"ssebench: serving test_patch at {url} (difficulty {settings.difficulty}, {where})"

    async def serve() -> None:
        async with root.open_daemon(settings.difficulty) as daemon:
            await http.serve_test_patch(
                serving, daemon, sockets, daemon_app=http_adapter(daemon), ready=ready
            )

    asyncio.run(serve())
    return EXIT_OK


def cmd_run(args: argparse.Namespace, root: Root) -> int:
    from ssebench.core.cli import run
    from ssebench.core.server.listen import bind_all

    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not command:
        raise ConfigError("run needs a command after --, e.g. ssebench run --task DIR -- agent")
    # The server would refuse the same settings, but checking here never starts it at all.
    request = serve_request(args, root)
    check_serving(root, request)
    task, timeout = root.task, root.settings.mcp_timeout
    if args.prediction_out is None and (args.model is not None or args.task_id is not None):
        raise ConfigError("--model and --task-id name a prediction: use --prediction-out FILE")
    if args.prediction_out is not None and task is None:
        raise ConfigError("--prediction-out records the change to a task's tree: use --task DIR")
    if args.prediction_out is not None:
        from ssebench.core.cli.prediction import prediction_name
        from ssebench.evaluate.predictions import DEFAULT_MODEL

        assert task is not None
        prediction_name(task, args.task_id, args.model or DEFAULT_MODEL)
    # Bound here and handed to the server: a port another server holds is refused before
    # anything starts, and no other server can answer in our server's place.
    sockets = bind_all(addresses(request, task is not None))
    # An unspecified address listens on loopback too; the guard accepts 127.0.0.1 as Host.
    probe = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(args.host, args.host)
    url = f"http://{url_host(probe)}:{args.port}/mcp"
    locked = run.withheld_lock(root)
    if args.prediction_out is None:
        server = run.Server(request, sockets, dict(os.environ))
        return run.run_with_server(server, command, url, timeout, locked=locked)
    from ssebench.core.cli.prediction import recorded
    from ssebench.evaluate.predictions import DEFAULT_MODEL

    assert task is not None
    with recorded(task, args.prediction_out, args.task_id, args.model or DEFAULT_MODEL) as done:
        # The server records each call where only we look (our private folder).
        asked = request.model_copy(update={"calls": done.calls})
        server = run.Server(asked, sockets, dict(os.environ))
        return run.run_with_server(server, command, url, timeout, done.finish, locked)


def registration(agent: str, host: str = PUBLIC_HOST, port: int = MCP_PORT) -> str:
    """What `ssebench mcp-config` prints: ready to paste, one form per kind of agent."""
    url = f"http://{url_host(host)}:{port}/mcp"
    if agent == "claude":
        return f"claude mcp add {NAME} {url} --transport http --scope user"
    if agent == "codex":
        return (
            f"# ~/.codex/config.toml: a test_patch call runs a full build and test cycle\n"
            f"[mcp_servers.{NAME}]\n"
            f'url = "{url}"\n'
            f"startup_timeout_sec = {CODEX_STARTUP_TIMEOUT}\n"
            f"tool_timeout_sec = {CODEX_TOOL_TIMEOUT}"
        )
    return json.dumps({"mcpServers": {NAME: {"type": "http", "url": url}}}, indent=2)


def cmd_mcp_config(args: argparse.Namespace, root: Root) -> int:
    print(registration(args.agent, args.host, args.port))
    return EXIT_OK
