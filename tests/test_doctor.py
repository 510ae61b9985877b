"""Bad rows do not brick a file; ``graphmem doctor`` lists and repairs them."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graphmem import EmbedderMismatchError, GraphmemError, HashEmbedder, Memory


def _zombie(mem: Memory) -> str:
    kept = mem.add_learning("Keep emails short", tool="send_email")
    zombie = mem.add_learning("Always cc the manager", tool="send_email")
    mem.cypher("MATCH (l:Learning {id: $id}) SET l.status = 'zombie'", {"id": zombie.id}, write=True, scope="all")
    return kept.id


def test_bad_status_does_not_brick_context_or_open(
    make_memory: Callable[..., Memory], db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    mem = make_memory()
    kept = _zombie(mem)
    ctx = mem.context("Email Dana", tool="send_email")  # the same Memory, after the raw write
    assert kept in [s.learning.id for s in ctx.learnings]
    mem.close()
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        again = make_memory()
    assert any("doctor" in r.getMessage() for r in caplog.records)
    assert [b["table"] for b in again.store.bad_rows] == ["Learning"]
    assert "zombie" in again.store.bad_rows[0]["problems"][0]
    assert kept in [s.learning.id for s in again.context("Email Dana", tool="send_email").learnings]
    with pytest.raises(GraphmemError, match="doctor"):
        again.get_learning(again.store.bad_rows[0]["id"])


def test_doctor_lists_and_repairs_a_bad_status(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    _zombie(mem)
    report = mem.doctor()
    assert not report.ok
    assert [(p["kind"], p["table"]) for p in report.problems] == [("bad_value", "Learning")]
    assert "zombie" in report.problems[0]["message"]
    fixed = mem.doctor(repair=True)
    assert fixed.ok and fixed.repaired
    bad_id = report.problems[0]["id"]
    assert mem.get_learning(bad_id).status == "disabled"
    assert mem.store.bad_rows == []
    assert mem.doctor().ok


def test_deleted_meta_reopens_and_doctor_is_clean(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem = make_memory()
    mem.add_learning("Keep emails short")
    mem.cypher("MATCH (m:Meta) DELETE m", write=True, force=True, scope="all")
    assert {p["id"] for p in mem.doctor().problems if p["kind"] == "meta"} == {"embedder", "dim", "schema_version"}
    mem.close()
    again = make_memory()  # the schema run again, idempotently, records the bookkeeping again
    assert again.cypher("MATCH (l:Learning) RETURN count(l) AS n") == [{"n": 1}]
    assert again.doctor().ok
    rows = again.cypher("MATCH (m:Meta) RETURN m.key AS k ORDER BY k", scope="all")
    assert [r["k"] for r in rows] == ["dim", "embedder", "schema_version"]


def test_deleted_meta_with_another_embedder_is_refused(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem = make_memory()
    mem.add_learning("Keep emails short")
    mem.cypher("MATCH (m:Meta) DELETE m", write=True, force=True, scope="all")
    mem.close()
    with pytest.raises(EmbedderMismatchError, match="dims"):
        Memory(db_path, embedder=HashEmbedder(dim=32))
    assert make_memory().doctor().ok  # the right embedder still opens it


def test_missing_embedding_and_dangling_supersede_are_repaired(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    first = mem.add_learning("Keep emails short")
    second = mem.add_learning("Use the v2 billing API")
    mem.cypher("MATCH (l:Learning {id: $id}) SET l.embedding = NULL", {"id": first.id}, write=True, scope="all")
    mem.cypher("MATCH (l:Learning {id: $id}) SET l.superseded_by = 'nobody'", {"id": second.id}, write=True, scope="all")
    report = mem.doctor()
    kinds = sorted((p["kind"], p["id"]) for p in report.problems)
    assert ("bad_value", first.id) in kinds and ("dangling", second.id) in kinds
    assert mem.doctor(repair=True).ok
    assert mem.get_learning(second.id).superseded_by is None
    assert first.id in mem.store.learning_catalog
    assert mem.search("emails short")


def test_mirror_mismatch_is_reported_and_repaired(make_memory: Callable[..., Memory]) -> None:
    mem = make_memory()
    mem.add_learning("Keep emails short")
    mem.store.learning_catalog.remove(mem.store.learning_catalog.ids[0])  # the mirror drifts
    assert [p["kind"] for p in mem.doctor().problems] == ["mirror"]
    assert mem.doctor(repair=True).ok
    assert len(mem.store.learning_catalog) == 1


def _cli(db: Path, *args: str) -> Any:
    from typer.testing import CliRunner

    from graphmem.cli import _register_groups, app

    _register_groups()
    return CliRunner().invoke(app, ["--db", str(db), "--embedder", "hash", *args])


def test_cli_doctor(make_memory: Callable[..., Memory], db_path: Path) -> None:
    mem = make_memory(user="default")
    _zombie(mem)
    mem.close()
    out = _cli(db_path, "doctor", "--json")
    assert out.exit_code == 1
    data = json.loads(out.stdout)
    assert data["ok"] is False and data["problems"][0]["table"] == "Learning"
    out = _cli(db_path, "doctor", "--repair", "--json")
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["ok"] is True
    out = _cli(db_path, "doctor")
    assert out.exit_code == 0 and "no problems" in out.stdout
