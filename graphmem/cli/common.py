"""What every graphmem command shares: the root command, its options, output helpers.

``graphmem --db PATH [--user U] COMMAND``. Every command that prints data takes ``--json``.
Errors print on one line and exit non-zero, with no traceback. This is the only module that
reads environment variables (GRAPHMEM_DB, GRAPHMEM_USER, GRAPHMEM_EMBEDDER, ANTHROPIC_API_KEY).

Command groups live in the other modules of :mod:`graphmem.cli` and register on :data:`app`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

import typer
import typer.core
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from graphmem.errors import EmbedderMismatchError, GraphmemError

try:  # recent typer vendors click as typer._click: its exceptions are the ones raised
    from typer._click import exceptions as click_errors
    from typer._click.core import Command as ClickCommand
    from typer._click.core import Context as ClickContext
except ImportError:  # pragma: no cover - older typer on plain click
    from click import exceptions as click_errors  # type: ignore[no-redef]
    from click.core import Command as ClickCommand  # type: ignore[assignment]
    from click.core import Context as ClickContext  # type: ignore[assignment]

#: Options of the root command that may also be given after the command (value-taking, flags).
GLOBAL_VALUE_OPTIONS = ("--db", "--user", "--embedder", "--server", "--api-key")
GLOBAL_FLAG_OPTIONS = ("--read-only",)


class GraphmemGroup(typer.core.TyperGroup):
    """The root group: global options are accepted after the command too, and usage errors
    print one line and exit 1 (like every other error)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        plain_value_labels(self)

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        """Move global options written after the command to before it."""
        return super().parse_args(ctx, hoist_global_options(self, ctx, list(args)))

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """Run the CLI; usage errors become ``error: ...`` on one line and exit status 1."""
        standalone = kwargs.get("standalone_mode", True)
        kwargs["standalone_mode"] = False
        if not standalone:
            return super().main(*args, **kwargs)
        try:
            rv = super().main(*args, **kwargs)
        except click_errors.NoArgsIsHelpError as e:
            typer.echo(e.ctx.get_help() if e.ctx is not None else str(e))
            sys.exit(0)
        except click_errors.UsageError as e:
            hint = f" (see `{e.ctx.command_path} --help`)" if e.ctx is not None else ""
            err_console.print(f"[red]error:[/red] {e.format_message()}{hint}", highlight=False, soft_wrap=True)
            sys.exit(1)
        except click_errors.ClickException as e:
            err_console.print(f"[red]error:[/red] {e.format_message()}", highlight=False, soft_wrap=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            err_console.print("aborted", highlight=False)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) and not isinstance(rv, bool) else 0)


def plain_value_labels(cmd: ClickCommand) -> None:
    """Show a value's kind in --help as click does (TEXT, INTEGER, FLOAT, or the choices), and
    nothing for flags, instead of Python type labels such as ``<bool>`` or ``<list[str]>``."""
    for param in cmd.params:
        if getattr(param, "is_flag", False) or param.opts == ["--help"]:
            label = ""
        elif param.metavar is not None:
            label = param.metavar
        else:
            desc = getattr(param, "type_descriptor", None)
            choices = getattr(desc, "choices", None) if getattr(desc, "is_choice", False) else None
            if choices:
                label = "|".join(str(getattr(c, "value", c)) for c in choices)
            else:
                bare = param.bare_type() if hasattr(param, "bare_type") else str(getattr(param, "type", "text"))
                bare = bare.removeprefix("list[").removesuffix("]").lower()
                label = {"str": "TEXT", "int": "INTEGER", "float": "NUMBER", "path": "PATH"}.get(bare, bare.upper())
        setattr(param, "display_type_rich", lambda ctx, _label=label: _label)  # noqa: B010
    help_option = cmd.get_help_option

    def quiet_help_option(ctx: ClickContext) -> Any:
        opt = help_option(ctx)
        if opt is not None:
            setattr(opt, "display_type_rich", lambda ctx: "")  # noqa: B010
        return opt

    setattr(cmd, "get_help_option", quiet_help_option)  # noqa: B010
    for sub in getattr(cmd, "commands", {}).values():
        plain_value_labels(sub)


def hoist_global_options(group: Any, ctx: ClickContext, args: list[str]) -> list[str]:
    """``args`` with the global options found after the command name moved in front of it.

    An option the command itself declares (``forget --user``, ``keys create --user``) stays with
    the command, and so does everything after ``--`` and every argument of a command that passes
    unknown options on (``bench NAME ...``).
    """
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "--":  # options before the command
        i += 2 if args[i] in GLOBAL_VALUE_OPTIONS else 1
    if i >= len(args) or args[i] == "--":
        return args
    head, rest = args[:i], args[i:]
    leaf: Any = group.get_command(ctx, rest[0])
    j = 1
    while hasattr(leaf, "get_command") and j < len(rest) and not rest[j].startswith("-"):
        leaf = leaf.get_command(ctx, rest[j])
        j += 1
    if leaf is None or getattr(leaf, "context_settings", {}).get("ignore_unknown_options"):
        return args
    own = {opt for p in leaf.params for opt in (*p.opts, *p.secondary_opts)}
    moved: list[str] = []
    kept: list[str] = []
    k = 0
    while k < len(rest):
        tok = rest[k]
        if tok == "--":
            kept += rest[k:]
            break
        name = tok.split("=", 1)[0]
        if name in own or name not in (*GLOBAL_VALUE_OPTIONS, *GLOBAL_FLAG_OPTIONS):
            kept.append(tok)
        elif name in GLOBAL_VALUE_OPTIONS and "=" not in tok:
            moved += rest[k : k + 2]
            k += 1
        else:
            moved.append(tok)
        k += 1
    if "--json" in head and "--json" not in kept and "--json" in own:  # `graphmem --json list`
        head = [t for t in head if t != "--json"]
        kept.append("--json")
    return head + moved + kept


app = typer.Typer(
    cls=GraphmemGroup,
    name="graphmem",
    help="graphmem: a graph-native learning memory for self-improving LLM agents (Kùzu).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(soft_wrap=True)  # long lines stay whole (paths, ids): the terminal wraps them
err_console = Console(stderr=True)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class CliState:
    """Options given before the command."""

    db: str | None = None
    user: str = "default"
    embedder: str = "minilm"
    read_only: bool = False
    server: str | None = None  # --server URL: talk to `graphmem serve` instead of opening --db
    api_key: str | None = None
    _memory: Any = field(default=None, repr=False)


state = CliState()


@app.callback()
def _root(
    db: str = typer.Option(None, "--db", envvar="GRAPHMEM_DB", help="Database file (created if missing)."),
    user: str = typer.Option("default", "--user", envvar="GRAPHMEM_USER", help="Whose memory to use."),
    embedder: str = typer.Option(
        "minilm", "--embedder", envvar="GRAPHMEM_EMBEDDER",
        help="minilm (bundled MiniLM), minilm-int8 (the same model in int8: faster, slightly less precise; "
             "its own files) or hash (tests, no torch)."
    ),
    read_only: bool = typer.Option(False, "--read-only", help="Open the file read-only."),
    server: str = typer.Option(None, "--server", envvar="GRAPHMEM_SERVER", help="Use a `graphmem serve` URL instead of --db."),
    api_key: str = typer.Option(None, "--api-key", envvar="GRAPHMEM_API_KEY", help="The API key for --server."),
) -> None:
    state.db, state.user, state.embedder, state.read_only = db, user, embedder, read_only
    state.server, state.api_key = server, api_key


# --embedder values -> the name a database file records for that embedder
EMBEDDER_NAMES = {"minilm": "all-MiniLM-L6-v2", "minilm-int8": "all-MiniLM-L6-v2-int8", "hash": "hash-384"}


def make_embedder(name: str) -> Any:
    """The embedder an ``--embedder`` value names (a GraphmemError saying the choices otherwise)."""
    from graphmem.embed import HashEmbedder, SentenceTransformerEmbedder

    if name not in EMBEDDER_NAMES:
        raise GraphmemError(f"unknown --embedder {name!r}; use " + ", ".join(EMBEDDER_NAMES))
    return HashEmbedder() if name == "hash" else SentenceTransformerEmbedder(quantize=name == "minilm-int8")


def open_memory() -> Any:
    """The Memory the command works on (opened once per invocation)."""
    from graphmem.memory import Memory

    if state._memory is not None:
        return state._memory
    if state.server and not state.db:  # served: same methods as Memory, the user is the key's
        from graphmem.client import Client

        state._memory = Client(state.server, api_key=state.api_key)
        return state._memory
    if not state.db:
        raise GraphmemError("no database given: pass --db PATH (or set GRAPHMEM_DB)")
    embedder = make_embedder(state.embedder)
    try:
        state._memory = Memory(
            state.db, user=state.user, read_only=state.read_only, embedder=embedder, llm=make_llm(),
            **bolt_credentials(state.db),
        )
    except EmbedderMismatchError as e:  # name the option that fixes it
        fits = [k for k, v in EMBEDDER_NAMES.items() if repr(v) in str(e) and k != state.embedder]
        other = fits[0] if fits else " or ".join(k for k in EMBEDDER_NAMES if k != state.embedder)
        raise EmbedderMismatchError(f"{e} (CLI: --embedder {other}, or set GRAPHMEM_EMBEDDER={other})") from None
    return state._memory


def bolt_credentials(db: str) -> dict[str, Any]:
    """``bolt_auth`` from GRAPHMEM_BOLT_USER / GRAPHMEM_BOLT_PASSWORD when --db is a bolt:// URL."""
    if "://" not in db or "GRAPHMEM_BOLT_USER" not in os.environ:
        return {}
    return {"bolt_auth": (os.environ["GRAPHMEM_BOLT_USER"], os.environ.get("GRAPHMEM_BOLT_PASSWORD", ""))}


def make_llm() -> Any:
    """AnthropicLLM when ANTHROPIC_API_KEY is set, else the offline default."""
    from graphmem.llm import AnthropicLLM, OfflineLLM

    key = os.environ.get("ANTHROPIC_API_KEY")
    if key:
        return AnthropicLLM(api_key=key, base_url=os.environ.get("ANTHROPIC_BASE_URL") or None)
    return OfflineLLM()


def command(*args: Any, target: typer.Typer | None = None, **kwargs: Any) -> Callable[[F], F]:
    """``app.command`` (or ``target.command`` for a sub-app) whose errors print one line and exit 1
    (no traceback), and which closes the command's Memory when it ends."""

    def wrap(fn: F) -> F:
        import functools

        @functools.wraps(fn)
        def inner(*a: Any, **kw: Any) -> Any:
            with cli_errors():
                try:
                    return fn(*a, **kw)
                finally:
                    if state._memory is not None:
                        state._memory.close()
                        state._memory = None

        inner.__doc__ = _first_paragraph_on_one_line(fn.__doc__)
        (target or app).command(*args, **kwargs)(inner)
        return fn

    return wrap


def _first_paragraph_on_one_line(doc: str | None) -> str | None:
    """A docstring whose first paragraph is one line: `graphmem --help` lists that paragraph as the
    command's summary and would keep the source's line breaks in the middle of its sentences."""
    if not doc:
        return doc
    import inspect

    first, sep, rest = inspect.cleandoc(doc).partition("\n\n")
    return " ".join(line.strip() for line in first.splitlines()) + sep + rest


@contextmanager
def cli_errors() -> Iterator[None]:
    """Turn graphmem errors into one line on stderr and exit status 1."""
    try:
        yield
    except GraphmemError as e:
        err_console.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(1) from None


def to_jsonable(value: Any) -> Any:
    """Models, datetimes and containers as plain JSON values."""
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump())
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [to_jsonable(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return value.item()
    return value


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    sys.stdout.write(json.dumps(to_jsonable(value), indent=2, ensure_ascii=False) + "\n")


def print_rows(rows: list[dict[str, Any]], title: str | None = None) -> None:
    """Print dict rows as a rich table."""
    if not rows:
        console.print("(no rows)")
        return
    table = Table(title=title, show_lines=False)
    columns = list(rows[0].keys())
    for col in columns:
        table.add_column(str(col), overflow="fold")
    for row in rows:
        table.add_row(*[_cell(row.get(c)) for c in columns])
    console.print(table)


def _cell(value: Any) -> str:
    value = to_jsonable(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else str(value)


def learning_rows(learnings: list[Any]) -> list[dict[str, Any]]:
    """The columns `list` shows for learnings."""
    return [
        {
            "id": l.id[:8],
            "kind": l.kind,
            "status": l.status,
            "tier": l.tier,
            "tool": l.tool or "",
            "content": l.content,
            "h/h": f"{l.helpful}/{l.harmful}",
            "conf": f"{l.confidence:.2f}",
        }
        for l in learnings
    ]


# --- helpers shared by the commands -------------------------------------------------------
def other_users(mem: Any) -> list[str]:
    """The users with learnings or events in the file when --user has none (else [])."""
    store = getattr(mem, "store", None)  # a Client (--server) has no store: the key names the user
    if store is None:
        return []
    owners = set(store.learning_catalog.user) | set(store.event_catalog.user)
    return [] if mem.user in owners else sorted(owners)


def warn_other_users(mem: Any) -> None:
    """On stderr: --user has no rows here but other users do; name them."""
    others = other_users(mem)
    if others:
        shown = ", ".join(others[:10]) + (f" and {len(others) - 10} more" if len(others) > 10 else "")
        err_console.print(
            f"note: user {mem.user!r} has no learnings or events in {state.db}; it holds those of "
            f"{shown}: pass --user NAME (or set GRAPHMEM_USER)", highlight=False, soft_wrap=True,
        )


#: the shortest id prefix the CLI accepts (ids are uuids; `list` shows 8 characters)
MIN_ID_PREFIX = 4


def resolve_id(mem: Any, ident: str, what: str = "learning") -> str:
    """A full id from a full id or a unique prefix (at least :data:`MIN_ID_PREFIX` characters),
    among what this user may see. ``what``: learning (their own and shared ones), context or
    objective (their own). The one rule for every command that takes an id."""
    ident = ident.strip()
    if len(ident) >= 36 or getattr(mem, "store", None) is None:  # a full id, or --server: the server checks
        return ident
    if len(ident) < MIN_ID_PREFIX:
        raise GraphmemError(f"{what} id {ident!r} is too short; give at least {MIN_ID_PREFIX} characters of it")
    if what == "learning":
        catalog = mem.store.learning_catalog
        shared = catalog.col("shared")
        matches = [i for row, i in enumerate(catalog.ids)
                   if i.startswith(ident) and (catalog.user[row] == mem.user or shared[row] > 0)]
    else:
        table = {"context": "Application", "objective": "Objective"}[what]
        matches = mem.store.ids_with_prefix(table, mem.user, ident)
    if not matches:
        raise GraphmemError(f"no {what} of user {mem.user!r} has an id starting with {ident!r}")
    if len(matches) > 1:
        shown = ", ".join(m[:12] for m in matches[:5])
        raise GraphmemError(f"{what} id {ident!r} is ambiguous ({shown}, ...); give more characters")
    return str(matches[0])
