"""Where a closed database file's bytes go: column pages per table, free pages, and the rest.

Kùzu 0.11.3 stores everything in one file of 4 KB pages. ``CALL storage_info(table)`` lists the
pages of every column of a table and ``CALL fsm_info()`` the free pages (pages a checkpoint
released and a later one may reuse); what neither lists is the primary-key index of each node
table and the catalog. In Kùzu 0.11.3 a node table's primary-key index takes at least 1.04 MB as
soon as the table holds one row (its 512 slot arrays get 255 header pages of 4 KB instead of 3), and
up to ~3 MB more as its keys spread over its 256 sub-indexes (a few pages each); an empty table
costs nothing. :func:`breakdown` reports these parts for the ingest benchmark and the tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kuzu

PAGE_BYTES = 4096  # Kùzu's page size (fixed at build time)


@dataclass(frozen=True)
class FileBreakdown:
    """The parts of one closed database file, in bytes."""

    file_bytes: int
    wal_bytes: int
    free_bytes: int
    columns: dict[str, int] = field(default_factory=dict)  # column pages of each table that has any
    node_tables_with_rows: tuple[str, ...] = ()
    fulltext_indexes: int = 0  # Kùzu full-text indexes present in the file

    @property
    def column_bytes(self) -> int:
        """Bytes of every table's column pages."""
        return sum(self.columns.values())

    @property
    def index_and_catalog_bytes(self) -> int:
        """What is neither column nor free pages: the primary-key indexes, the catalog and any
        full-text index."""
        return self.file_bytes - self.column_bytes - self.free_bytes

    def as_dict(self) -> dict[str, object]:
        """JSON-ready figures (bytes)."""
        return {"file_bytes": self.file_bytes, "wal_bytes": self.wal_bytes, "free_bytes": self.free_bytes,
                "column_bytes": self.column_bytes, "index_and_catalog_bytes": self.index_and_catalog_bytes,
                "node_tables_with_rows": list(self.node_tables_with_rows),
                "fulltext_indexes": self.fulltext_indexes, "columns": dict(self.columns)}


def breakdown(path: str | os.PathLike[str]) -> FileBreakdown:
    """The parts of the closed database file at ``path`` (opened read-only by Kùzu; no graphmem
    ``Memory`` may hold it for writing meanwhile)."""
    path = Path(path)
    wal = path.with_name(path.name + ".wal")
    db = kuzu.Database(str(path), read_only=True)
    conn = kuzu.Connection(db)
    try:
        columns: dict[str, int] = {}
        with_rows: list[str] = []
        for name, kind in _rows(conn, "CALL show_tables() RETURN name, type"):
            pages = sum(int(n) for (n,) in _rows(conn, f"CALL storage_info('{name}') RETURN num_pages"))
            if pages:
                columns[str(name)] = pages * PAGE_BYTES
            if kind == "NODE" and _rows(conn, f"MATCH (n:`{name}`) RETURN 1 LIMIT 1"):
                with_rows.append(str(name))
        free = sum(int(n) for (n,) in _rows(conn, "CALL fsm_info() RETURN num_pages"))
        fts = sum(1 for (t,) in _rows(conn, "CALL show_indexes() RETURN index_type") if str(t).upper() == "FTS")
    finally:
        conn.close()
        db.close()
    return FileBreakdown(file_bytes=path.stat().st_size, wal_bytes=wal.stat().st_size if wal.exists() else 0,
                         free_bytes=free * PAGE_BYTES, columns=columns,
                         node_tables_with_rows=tuple(sorted(with_rows)), fulltext_indexes=fts)


def _rows(conn: kuzu.Connection, query: str) -> list[list[Any]]:
    result = conn.execute(query)
    if isinstance(result, list):
        result = result[-1]
    return [list(row) for row in result.get_all()]
