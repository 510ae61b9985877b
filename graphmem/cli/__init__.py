"""The graphmem command line: a thin layer over :class:`graphmem.Memory`.

``graphmem --db PATH [--user U] COMMAND``. The root command, its options and the helpers every
command shares live in :mod:`graphmem.cli.common`; the core commands in :mod:`graphmem.cli.basics`;
each other module of this package is one command group that registers on :data:`app` when
:func:`main` imports it.
"""

from __future__ import annotations

import graphmem.cli.basics  # noqa: F401  -- registers the core commands
from graphmem.cli.common import app, hoist_global_options

__all__ = ["SHARED_MODULES", "app", "hoist_global_options", "main"]

#: Modules of this package that hold no command group of their own.
SHARED_MODULES = frozenset({"common", "basics"})


def _register_groups() -> None:
    """Import the command modules so their commands attach to :data:`app`."""
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(__path__):
        if mod.name not in SHARED_MODULES and not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


def main() -> None:
    """Entry point of the ``graphmem`` console script."""
    _register_groups()
    app()
