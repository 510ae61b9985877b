"""Both store engines implement every per-concern Protocol of graphmem/store/interfaces.py.

The Kùzu store (``KuzuGraphStore``) and the Bolt store (``bolt_store_class()``, assembled from
the same mixins over ``BoltBase``) must have every method of every Protocol with the same
parameters (names, kinds, defaults); mypy checks the Kùzu store's annotations too (see
graphmem/store/kuzu_graph.py). Every public method of the Kùzu store belongs to one Protocol, so
the interfaces do not drift from the code.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from graphmem import HashEmbedder
from graphmem.store import GraphStore, KuzuGraphStore, open_store, release_store
from graphmem.store.bolt import bolt_store_class
from graphmem.store.interfaces import CONCERNS


def _methods(proto: type) -> dict[str, Any]:
    """The methods and properties a Protocol declares itself (not those of its bases)."""
    return {name: value for name, value in vars(proto).items()
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))}


def _shape(fn: Any) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def _mismatches(cls: type) -> list[str]:
    problems = []
    for proto in CONCERNS:
        for name, declared in _methods(proto).items():
            actual = inspect.getattr_static(cls, name, None)
            if actual is None:
                problems.append(f"{cls.__name__} lacks {proto.__name__}.{name}")
            elif isinstance(declared, property) != isinstance(actual, property):
                problems.append(f"{cls.__name__}.{name}: property in one, method in the other ({proto.__name__})")
            elif inspect.isfunction(declared) and _shape(actual) != _shape(declared):
                problems.append(f"{cls.__name__}.{name}{inspect.signature(actual)} differs from "
                                f"{proto.__name__}.{name}{inspect.signature(declared)}")
    return problems


@pytest.mark.parametrize("cls", [KuzuGraphStore, bolt_store_class()], ids=["kuzu", "bolt"])
def test_each_store_implements_every_concern(cls: type) -> None:
    assert len(CONCERNS) >= 15 and sum(len(_methods(p)) for p in CONCERNS) > 100  # the Protocols were read
    problems = _mismatches(cls)
    assert not problems, "\n".join(problems)


def test_every_public_store_method_belongs_to_a_concern() -> None:
    declared = {name for proto in CONCERNS for name in _methods(proto)}
    public = {
        name for klass in KuzuGraphStore.__mro__ if klass.__module__.startswith("graphmem.store")
        for name, value in vars(klass).items()
        if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property))
    }
    missing = sorted(public - declared)
    assert not missing, (f"public store methods in no Protocol: {missing}; declare each in its concern's "
                         "Protocol in graphmem/store/interfaces.py")
    assert sorted(declared - public) == []  # and no Protocol method the Kùzu store lacks


def test_a_store_is_a_graphstore_at_run_time(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    store = open_store(tmp_path / "memory.kuzu", dim=embedder.dim, embedder_name=embedder.name)
    try:
        assert isinstance(store, GraphStore)  # every method and attribute, on a real file
        for attr in ("dim", "embedder_name", "read_only", "generation", "schema_version", "path",
                     "learning_catalog", "event_catalog"):
            assert hasattr(store, attr), attr
    finally:
        release_store(store)


def test_the_check_names_a_missing_or_different_method() -> None:
    class Partial:
        def get_learning(self, learning_id: str, extra: int = 0) -> Any: ...

    problems = _mismatches(Partial)
    assert any(p == "Partial lacks Learnings.insert_learning" for p in problems)
    different = [p for p in problems if p.startswith("Partial.get_learning(")]
    assert len(different) == 1 and "extra" in different[0] and "differs from Learnings.get_learning(" in different[0]
