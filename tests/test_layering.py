"""The import graph of graphmem flows one way: no cycles, and no module imports a layer above it.

Layers, top to bottom (a module belongs to the most specific entry that names it or its package):

1. entry points: ``graphmem`` (the package root), ``graphmem.__main__``, ``graphmem.cli``,
   ``graphmem.server``, ``graphmem.integrations``, ``graphmem.client``
2. facade: ``graphmem.memory``
3. services: every module not named in another layer (``learnings``, ``events``, ``learn``,
   ``retrieve``, ``summaries``, ``lifecycle``, ``outcomes``, ``promote``, ``improve``, ...)
4. engines: ``graphmem.store``, ``graphmem.embed``, ``graphmem.embed_model``, ``graphmem.embed_workers``, ``graphmem.embed_openai``, ``graphmem.llm``
5. foundation: ``graphmem.models``, ``graphmem.config``, ``graphmem.errors``, ``graphmem.inputs``,
   ``graphmem.deps``, and the pure text rules ``graphmem.learn.injection`` and
   ``graphmem.learn.contradiction`` (the services and the offline LLM both use them)

The rules:

- A module imports only modules of its own layer or a lower one. Every import counts:
  top-level, inside a function, and under ``if TYPE_CHECKING:``.
- One exception: ``graphmem.deps`` (foundation) bundles the store and the embedder, so it may name
  ``graphmem.store`` and ``graphmem.embed`` under ``if TYPE_CHECKING:`` (annotations only, never
  at run time).
- No import cycle among graphmem modules, module by module (the store's and the server's too),
  again counting every import. The store's modules name the engine through the Protocols of
  ``graphmem.store.connection`` and ``graphmem.store.interfaces``, never the assembled class.

A service never takes or imports ``Memory``: it gets a :class:`graphmem.deps.Deps`, and when it
needs another service it builds it from the same Deps (``LearningService(deps)``).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ENTRY, FACADE, SERVICES, ENGINES, FOUNDATION = 1, 2, 3, 4, 5
LAYER_NAMES = {ENTRY: "entry points", FACADE: "facade", SERVICES: "services", ENGINES: "engines",
               FOUNDATION: "foundation"}
EXACT = {"graphmem": ENTRY, "graphmem.__main__": ENTRY}
PACKAGES = {
    "graphmem.cli": ENTRY, "graphmem.server": ENTRY, "graphmem.integrations": ENTRY, "graphmem.client": ENTRY,
    "graphmem.memory": FACADE,
    "graphmem.store": ENGINES, "graphmem.embed": ENGINES, "graphmem.embed_model": ENGINES, "graphmem.embed_workers": ENGINES, "graphmem.embed_openai": ENGINES, "graphmem.llm": ENGINES,
    "graphmem.models": FOUNDATION, "graphmem.config": FOUNDATION, "graphmem.errors": FOUNDATION,
    "graphmem.inputs": FOUNDATION, "graphmem.deps": FOUNDATION, "graphmem.learn.injection": FOUNDATION,
    "graphmem.learn.contradiction": FOUNDATION,
}
#: Upward imports allowed under ``if TYPE_CHECKING:`` only: importer -> the packages it may name.
TYPE_CHECKING_ONLY = {"graphmem.deps": ("graphmem.store", "graphmem.embed")}


@dataclass(frozen=True)
class Import:
    """One import of a graphmem module: what, where, and whether only under TYPE_CHECKING."""

    target: str
    line: int
    type_checking: bool = False


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def layer_of(module: str) -> int:
    """The layer of a module: the most specific entry naming it or its package; else services."""
    if module in EXACT:
        return EXACT[module]
    best = max((p for p in PACKAGES if _within(module, p)), key=len, default=None)
    return PACKAGES[best] if best else SERVICES


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the graphmem package by dotted name (a package by its ``__init__``)."""
    found = {}
    for path in sorted((root / "graphmem").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(tree: ast.Module, module: str, is_package: bool, known: set[str]) -> list[Import]:
    out: list[Import] = []

    def visit(node: ast.AST, guarded: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        if isinstance(node, ast.Import):
            out.extend(Import(a.name, node.lineno, guarded) for a in node.names if a.name.split(".")[0] == "graphmem")
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if is_package else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([node.module] if node.module else []))
            if base.split(".")[0] == "graphmem":
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    out.append(Import(sub if sub in known else base, node.lineno, guarded))
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    visit(tree, False)
    return [i for i in out if i.target != module]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def import_graph(root: Path = ROOT) -> dict[str, list[Import]]:
    """module -> the graphmem modules it imports (top-level, function-local and TYPE_CHECKING)."""
    files = module_files(root)
    known = set(files)
    return {
        name: _imports(ast.parse(path.read_text(encoding="utf-8")), name, path.name == "__init__.py", known)
        for name, path in files.items()
    }


def upward_imports(graph: dict[str, list[Import]]) -> list[str]:
    """Every import of a higher layer, as a sentence that says what to do."""
    problems = []
    for module, imports in sorted(graph.items()):
        mine = layer_of(module)
        for imp in imports:
            theirs = layer_of(imp.target)
            if theirs >= mine:
                continue
            allowed = TYPE_CHECKING_ONLY.get(module, ())
            if imp.type_checking and any(_within(imp.target, p) for p in allowed):
                continue
            advice = (
                "pass what it needs as an argument or through graphmem.deps.Deps, and call the service "
                "function instead of a Memory method" if theirs <= FACADE else
                "move the code it needs down into that layer, or pass it in as an argument"
            )
            problems.append(
                f"{module} (line {imp.line}) imports {imp.target}: {LAYER_NAMES[mine]} must not import "
                f"{LAYER_NAMES[theirs]}; {advice}"
            )
    return problems


def cycles(graph: dict[str, list[Import]]) -> list[str]:
    """Every import cycle (strongly connected set of nodes), with the imports that close it."""
    edges: dict[str, dict[str, str]] = {}
    for module, imports in graph.items():
        here = edges.setdefault(module, {})
        for imp in imports:
            there = imp.target
            if there != module:
                here.setdefault(there, f"{module} (line {imp.line}) imports {imp.target}")
                edges.setdefault(there, {})
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def strongconnect(v: str) -> None:  # Tarjan; the graph has a few hundred nodes
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            strongconnect(v)
    return [
        "import cycle between " + ", ".join(group) + ": "
        + "; ".join(why for a in group for b, why in sorted(edges[a].items()) if b in group)
        + ". Break it by moving the shared code into the lower module, or by passing it in."
        for group in found
    ]


def test_graphmem_imports_flow_downward() -> None:
    graph = import_graph()
    assert "graphmem.memory" in graph and len(graph) > 50  # the walk found the package
    problems = upward_imports(graph)
    assert not problems, "\n".join(problems)


def test_no_import_cycle_anywhere_in_graphmem() -> None:
    graph = import_graph()
    for module in ("graphmem.store.kuzu_store", "graphmem.store.learnings", "graphmem.store.bolt.store",
                   "graphmem.server.core", "graphmem.server.metrics"):
        assert module in graph  # each store and server module is a node of its own
    problems = cycles(graph)
    assert not problems, "\n".join(problems)


def test_no_service_mentions_memory() -> None:
    graph = import_graph()
    users = sorted(m for m, imports in graph.items() if layer_of(m) > FACADE
                   for i in imports if i.target == "graphmem.memory")
    assert users == []


def test_the_checker_reports_an_upward_import_and_a_cycle() -> None:
    graph = {
        "graphmem.models": [Import("graphmem.memory", 3, type_checking=True)],  # foundation -> facade
        "graphmem.deps": [Import("graphmem.store", 5, type_checking=True), Import("graphmem.embed", 6)],
        "graphmem.learnings": [Import("graphmem.events", 7)],
        "graphmem.events": [Import("graphmem.learnings", 9, type_checking=True)],
        "graphmem.store.learnings": [Import("graphmem.store.kuzu_store", 1, type_checking=True)],
        "graphmem.store.kuzu_store": [Import("graphmem.store.learnings", 2)],
        "graphmem.memory": [Import("graphmem.learnings", 1)],
    }
    up = upward_imports(graph)
    assert len(up) == 2, up  # deps's TYPE_CHECKING import of the store is the one allowed
    assert up[0].startswith("graphmem.deps (line 6) imports graphmem.embed: foundation must not import engines")
    assert up[1].startswith("graphmem.models (line 3) imports graphmem.memory: foundation must not import facade")
    assert "Deps" in up[1]
    found = sorted(cycles(graph))
    assert len(found) == 2, found  # a cycle inside the store counts like any other
    assert "graphmem.events, graphmem.learnings" in found[0]
    assert "graphmem.events (line 9) imports graphmem.learnings" in found[0]
    assert "graphmem.store.kuzu_store, graphmem.store.learnings" in found[1]
    assert "graphmem.store.learnings (line 1) imports graphmem.store.kuzu_store" in found[1]
    assert layer_of("graphmem") == ENTRY and layer_of("graphmem.cli.learn") == ENTRY
    assert layer_of("graphmem.learn.curator") == SERVICES and layer_of("graphmem.learn.injection") == FOUNDATION
