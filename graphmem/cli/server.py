"""``graphmem serve``, ``graphmem keys`` and ``graphmem mcp``: one memory, many processes.

``graphmem --db F serve [--host 127.0.0.1] [--port 8420] [--keys keys.json]`` makes this process
the one owner of the file and serves it over HTTP (and MCP at /mcp). ``graphmem keys add --file
keys.json --user alice --role agent`` prints a new key once and stores only its hash.
``graphmem --db F --user U mcp`` serves the MCP tools over stdio for a desktop agent.
"""

from __future__ import annotations

import os

import typer

from graphmem.cli.common import (
    app,
    command,
    console,
    err_console,
    make_embedder,
    make_llm,
    open_memory,
    print_json,
    print_rows,
    state,
)
from graphmem.errors import GraphmemError, InvalidInputError

keys_app = typer.Typer(help="Create, list and remove the server's API keys (stored hashed).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")

DEFAULT_KEYS = "graphmem-keys.json"


@command("serve")
def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default: this machine only)."),
    port: int = typer.Option(8420, "--port", help="TCP port."),
    keys: str = typer.Option(DEFAULT_KEYS, "--keys", envvar="GRAPHMEM_KEYS_FILE",
                             help="The key file made by `graphmem keys add` (keys can also come as JSON in "
                                  "$GRAPHMEM_SERVER_KEYS)."),
    ssl_keyfile: str = typer.Option(None, "--ssl-keyfile", help="TLS private key (serve HTTPS directly)."),
    ssl_certfile: str = typer.Option(None, "--ssl-certfile", help="TLS certificate chain."),
    mcp: bool = typer.Option(True, "--mcp/--no-mcp", help="Also serve the MCP tools at /mcp."),
    log_level: str = typer.Option("warning", "--log-level", help="uvicorn log level."),
    metrics_public: bool = typer.Option(False, "--metrics-public",
                                        help="Serve /metrics without a key (for a scraper on a private network)."),
    store_url: str = typer.Option(None, "--store", envvar="GRAPHMEM_STORE",
                                  help="Serve a store on a Bolt graph server instead of a file: bolt://HOST:PORT/DATABASE "
                                       "(several servers may serve one such store). Same as --db with a bolt:// URL."),
    bolt_user: str = typer.Option(None, "--bolt-user", envvar="GRAPHMEM_BOLT_USER", help="User on the Bolt server."),
    bolt_password: str = typer.Option(None, "--bolt-password", envvar="GRAPHMEM_BOLT_PASSWORD",
                                      help="Password on the Bolt server (prefer $GRAPHMEM_BOLT_PASSWORD: a command "
                                           "line is visible to other local users)."),
) -> None:
    """Own the database file and serve it to every other process (HTTP API, OpenAPI at /docs, MCP at /mcp)."""
    import uvicorn

    from graphmem.config import Settings
    from graphmem.server import KeyStore, create_app

    db = store_url or state.db
    if not db:
        raise GraphmemError("serve needs the database: graphmem --db PATH serve, or graphmem serve --store bolt://HOST:PORT/DB")
    if store_url and state.db and store_url != state.db:
        raise InvalidInputError("give the database once: --db PATH or --store bolt://..., not both")
    bolt_auth = (bolt_user, bolt_password or "") if bolt_user else None
    store = KeyStore.load(keys, os.environ.get("GRAPHMEM_SERVER_KEYS"))
    if not len(store):
        console.print(f"[yellow]warning:[/yellow] no API keys in {keys} or $GRAPHMEM_SERVER_KEYS: every request "
                      "will get 401. Create one with: graphmem keys add --file KEYS --user USER --role agent")
    if host not in ("127.0.0.1", "localhost", "::1") and not ssl_certfile:
        console.print("[yellow]warning:[/yellow] serving beyond this machine without TLS: keys travel in clear "
                      "text. Put a TLS reverse proxy in front, or pass --ssl-keyfile/--ssl-certfile.")
    embedder = make_embedder(state.embedder)
    # the server's worker refreshes summaries, off the request path
    settings = Settings(summary_refresh="background", server_metrics_public=metrics_public)
    application = create_app(db, keys=store, embedder=embedder, llm=make_llm(), settings=settings, mcp=mcp,
                             bolt_auth=bolt_auth)
    scheme = "https" if ssl_certfile else "http"
    console.print(f"graphmem serving {db} at {scheme}://{host}:{port} ({len(store)} keys; docs at /docs)",
                  highlight=False)
    uvicorn.run(application, host=host, port=port, log_level=log_level, ssl_keyfile=ssl_keyfile,
                ssl_certfile=ssl_certfile, timeout_graceful_shutdown=10,
                access_log=log_level in ("info", "debug", "trace"))  # shown only at these levels


@command("add", target=keys_app)
def keys_add_cmd(
    user: str = typer.Option(..., "--user", help="The user the key reads and writes as."),
    role: str = typer.Option("agent", "--role", help="agent (read/write own memory) | analyst (read-only) | admin."),
    grant: list[str] = typer.Option([], "--grant", help="analyst: a user it may read ('*' for all; repeatable)."),
    file: str = typer.Option(DEFAULT_KEYS, "--file", envvar="GRAPHMEM_KEYS_FILE", help="The key file (created if missing)."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Create an API key: printed once, only its hash is stored."""
    from graphmem.server.auth import KeyStore

    store = KeyStore.load(file)
    if role == "analyst" and not grant:
        grant = [user]
    key, entry = store.add(user, role, grant)
    store.save(file)
    if json_out:
        print_json({"key": key, **{k: v for k, v in entry.items() if k != "hash"}})
    else:
        err_console.print(f"key {entry['id']} for user {user} ({role}) saved to {file}; it is shown only now:",
                          highlight=False)
        print(key)  # alone on stdout: KEY=$(graphmem keys add ...)


@command("list", target=keys_app)
def keys_list_cmd(
    file: str = typer.Option(DEFAULT_KEYS, "--file", envvar="GRAPHMEM_KEYS_FILE", help="The key file."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """List the keys (ids, users, roles; never the keys themselves)."""
    from graphmem.server.auth import KeyStore

    rows = [{k: v for k, v in e.items() if k != "hash"} for e in KeyStore.load(file).entries]
    if json_out:
        print_json(rows)
    else:
        print_rows(rows, title=file)


@command("remove", target=keys_app)
def keys_remove_cmd(
    key_id: str = typer.Argument(..., help="The key's id (from `graphmem keys list`)."),
    file: str = typer.Option(DEFAULT_KEYS, "--file", envvar="GRAPHMEM_KEYS_FILE", help="The key file."),
) -> None:
    """Remove a key (a running server keeps it until restarted)."""
    from graphmem.server.auth import KeyStore

    store = KeyStore.load(file)
    if not store.remove(key_id):
        raise InvalidInputError(f"no key with id {key_id!r} in {file}; see `graphmem keys list`")
    store.save(file)
    console.print(f"removed key {key_id}; restart the server to drop it there", highlight=False)


@command("mcp")
def mcp_cmd() -> None:
    """Serve the MCP tools over stdio for a desktop agent (this process owns --db; acts as --user)."""
    from graphmem.server.mcp_server import build_mcp

    if not state.db:
        raise GraphmemError("mcp needs the database file: graphmem --db PATH --user U mcp")
    build_mcp(memory=open_memory()).run("stdio")
