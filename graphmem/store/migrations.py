"""The schema migration runner: applies ``schema/NNN_*.cypher`` files in order.

The schema version is the highest applied file number, kept in the ``Meta`` node table with the
embedder's name and dimension. A database written by a newer schema is refused; an older one is
migrated forward. DDL runs in one transaction per file; ``CALL CREATE_FTS_INDEX`` must run in
auto-commit mode in Kùzu 0.11.3, so those statements run right after that file's transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import kuzu

from graphmem.errors import SchemaVersionError, StoreError

SCHEMA_DIR = Path(__file__).resolve().parent.parent.parent / "schema"
_PACKAGED_SCHEMA_DIR = Path(__file__).resolve().parent.parent / "schema"
_FILE = re.compile(r"^(\d{3})_[\w-]+\.cypher$")


@dataclass(frozen=True)
class Migration:
    """One numbered schema file."""

    version: int
    path: Path

    def statements(self, dim: int) -> list[str]:
        """The file's statements, comments stripped and ``{{DIM}}`` filled in."""
        text = self.path.read_text(encoding="utf-8").replace("{{DIM}}", str(dim))
        lines = [ln for ln in text.splitlines() if not ln.strip().startswith("//")]
        return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]


def schema_dir() -> Path:
    """Where the schema files are: the repo's ``schema/`` or the copy installed in the package."""
    for candidate in (SCHEMA_DIR, _PACKAGED_SCHEMA_DIR):
        if candidate.is_dir() and any(candidate.glob("*.cypher")):
            return candidate
    raise StoreError(f"graphmem's schema files are missing (looked in {SCHEMA_DIR}); reinstall graphmem")


def available() -> list[Migration]:
    """Every schema file, in version order."""
    found = []
    for path in schema_dir().iterdir():
        m = _FILE.match(path.name)
        if m:
            found.append(Migration(int(m.group(1)), path))
    return sorted(found, key=lambda mig: mig.version)


def latest_version() -> int:
    """The schema version this graphmem writes."""
    migs = available()
    return migs[-1].version if migs else 0


def read_meta(conn: kuzu.Connection) -> dict[str, str]:
    """The Meta key/value pairs, or {} on a database that has no schema yet."""
    try:
        result = conn.execute("MATCH (m:Meta) RETURN m.key, m.value")
    except RuntimeError:
        return {}
    rows = result.get_all() if not isinstance(result, list) else result[0].get_all()
    return {str(k): str(v) for k, v in rows}


def _set_meta(conn: kuzu.Connection, key: str, value: str) -> None:
    conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})


def migrate(conn: kuzu.Connection, dim: int, embedder_name: str) -> int:
    """Bring the database up to :func:`latest_version`; returns the version it is at now.

    Raises SchemaVersionError when the database is newer than this code.
    """
    meta = read_meta(conn)
    current = int(meta.get("schema_version", "0"))
    target = latest_version()
    if current > target:
        raise SchemaVersionError(
            f"this database has schema version {current}, but this graphmem only knows up to "
            f"{target}: upgrade graphmem (pip install -U graphmem) to open it"
        )
    for mig in available():
        if mig.version <= current:
            continue
        statements = mig.statements(dim)
        ddl = [s for s in statements if not s.upper().startswith("CALL ")]
        calls = [s for s in statements if s.upper().startswith("CALL ")]
        try:
            conn.execute("BEGIN TRANSACTION")
            for stmt in ddl:
                conn.execute(stmt)
            if mig.version == 1:
                _set_meta(conn, "embedder", embedder_name)
                _set_meta(conn, "dim", str(dim))
            conn.execute("COMMIT")
            for stmt in calls:
                conn.execute(stmt)
            _set_meta(conn, "schema_version", str(mig.version))
        except RuntimeError as e:
            raise StoreError(f"applying schema file {mig.path.name} failed: {e}") from e
        current = mig.version
    return current
