"""The schema migration runner: applies ``schema/NNN_*.cypher`` files in order.

The schema version is the highest applied file number, kept in the ``Meta`` node table with the
embedder's name and dimension. A database written by a newer schema is refused; an older one is
migrated forward. DDL runs in one transaction per file; other ``CALL`` statements must run in
auto-commit mode in Kùzu 0.11.3, so they run right after that file's transaction. The full-text
indexes (``CALL CREATE_FTS_INDEX``) are not created here: graphmem/store/fulltext.py builds them
when a query first reads them.
Every statement is applied idempotently (``IF NOT EXISTS``, indexes checked first), so a file that
was interrupted half-way — a process killed while creating a database — is finished on the next
open instead of failing on what already exists.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

import kuzu

from graphmem.errors import EmbedderMismatchError, SchemaVersionError, StoreError

# Kùzu reserves max_db_size of address space per open database (8 TiB by default), so a process
# with a few dozen open files runs out of it; 1 TiB still bounds no real memory.
MAX_DB_SIZE = 1 << 40

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


def _embedding_dim(conn: kuzu.Connection) -> int | None:
    """The dimension of Learning.embedding in the file, None without a Learning table."""
    try:
        result = conn.execute("CALL table_info('Learning') RETURN name, type")
    except RuntimeError:
        return None
    rows = result.get_all() if not isinstance(result, list) else result[-1].get_all()
    for name, type_ in rows:
        m = re.fullmatch(r"FLOAT\[(\d+)\]", str(type_).upper())
        if name == "embedding" and m:
            return int(m.group(1))
    return None


def _set_meta(conn: kuzu.Connection, key: str, value: str) -> None:
    conn.execute("MERGE (m:Meta {key: $k}) SET m.value = $v", {"k": key, "v": value})


_CREATE_TABLE = re.compile(r"^(CREATE\s+(?:NODE|REL)\s+TABLE)\s+(?!IF\s+NOT\s+EXISTS\b)", re.IGNORECASE)
_ALTER_ADD = re.compile(r"^(ALTER\s+TABLE\s+\w+\s+ADD)\s+(?!IF\s+NOT\s+EXISTS\b)", re.IGNORECASE)
_CREATE_FTS = re.compile(r"^CALL\s+CREATE_FTS_INDEX\s*\(\s*'(\w+)'\s*,\s*'(\w+)'", re.IGNORECASE)


def idempotent(statement: str) -> str:
    """``statement`` in a form that does nothing when it already ran (CREATE/ALTER ... IF NOT EXISTS).

    A schema file may have been applied in part (a process killed between its transaction and
    its full-text indexes, or an older graphmem that was not resumable): re-running it must
    finish the job, not fail on what exists.
    """
    statement = _CREATE_TABLE.sub(r"\1 IF NOT EXISTS ", statement, count=1)
    return _ALTER_ADD.sub(r"\1 IF NOT EXISTS ", statement, count=1)


def _indexes(conn: kuzu.Connection) -> set[tuple[str, str]]:
    result = conn.execute("CALL show_indexes() RETURN table_name, index_name")
    rows = result.get_all() if not isinstance(result, list) else result[-1].get_all()
    return {(str(t), str(i)) for t, i in rows}


def _call_done(conn: kuzu.Connection, statement: str) -> bool:
    """True when a CALL statement's effect is already there (an index that exists)."""
    m = _CREATE_FTS.match(statement)
    if m is None:
        return False
    return (m.group(1), m.group(2)) in _indexes(conn)


def apply(conn: kuzu.Connection, mig: Migration, dim: int, embedder_name: str) -> None:
    """Apply one schema file so that a half-applied one is finished, never failed on.

    Its DDL runs idempotently in one transaction; with it go the embedder's name and dimension
    (file 1) and, when the file has no CALL statements, its version. CALLs (full-text indexes)
    must run in auto-commit mode in Kùzu 0.11.3: each is skipped when its index exists, and the
    version is recorded after the last one.
    """
    statements = mig.statements(dim)
    ddl = [idempotent(s) for s in statements if not s.upper().startswith("CALL ")]
    # full-text indexes are built when first read (graphmem/store/fulltext.py), not here
    calls = [s for s in statements if s.upper().startswith("CALL ") and not _CREATE_FTS.match(s)]
    try:
        conn.execute("BEGIN TRANSACTION")
        try:
            for stmt in ddl:
                conn.execute(stmt)
            if mig.version == 1:
                _set_meta(conn, "embedder", embedder_name)
                _set_meta(conn, "dim", str(dim))
            if not calls:
                _set_meta(conn, "schema_version", str(mig.version))
        except BaseException:
            with suppress(RuntimeError):
                conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        for stmt in calls:
            if not _call_done(conn, stmt):
                conn.execute(stmt)
        if calls:
            _set_meta(conn, "schema_version", str(mig.version))
    except RuntimeError as e:
        raise StoreError(f"applying schema file {mig.path.name} failed: {e}") from e


def migrate(conn: kuzu.Connection, dim: int, embedder_name: str) -> int:
    """Bring the database up to :func:`latest_version`; returns the version it is at now.

    Resumable: a file interrupted half-way (killed process) is finished on the next open.
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
    if "dim" not in meta:  # Meta lost (or a new file): the vectors already there decide
        stored = _embedding_dim(conn)
        if stored is not None and stored != dim:
            raise EmbedderMismatchError(
                f"this file's Meta bookkeeping is missing and its vectors have {stored} dims, but "
                f"this Memory's embedder has {dim}: open it with the embedder that built it"
            )
    for mig in available():
        if mig.version <= current:
            continue
        apply(conn, mig, dim, embedder_name)
        current = mig.version
    return current


_CREATING = ".creating-"


def create_file(path: Path, dim: int, embedder_name: str) -> None:
    """Create a new database file at ``path`` so that it exists complete or not at all.

    Kùzu 0.11.3 builds a full-text index in several steps that are not one transaction: a process
    killed half-way leaves hidden tables that no statement can drop, and the index can then never
    be created on that file. So a new file is built and migrated under a temporary name in the
    same folder, closed, and hard-linked to ``path`` (which fails if another process created it
    first: theirs is kept). A kill leaves only a temporary file, removed by a later create.
    """
    _remove_stale(path)
    tmp = path.with_name(f".{path.name}{_CREATING}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    key = (dim, embedder_name, latest_version())
    try:
        image = _NEW_FILE_IMAGES.get(key)
        if image is None:
            _build(tmp, path, dim, embedder_name)
            with _IMAGES_LOCK:
                _NEW_FILE_IMAGES[key] = tmp.read_bytes()
        else:  # the same empty, migrated file this process built before: write its bytes
            tmp.write_bytes(image)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        with suppress(FileExistsError):
            os.link(tmp, path)
    finally:
        for leftover in (tmp, Path(f"{tmp}.wal")):
            with suppress(OSError):
                leftover.unlink()


# A new file is the same bytes for the same embedder and schema: the first one a process builds is
# kept (a few MB) and later ones are written from it, which skips the ~0.3 s of schema statements.
_NEW_FILE_IMAGES: dict[tuple[int, str, int], bytes] = {}
_IMAGES_LOCK = threading.Lock()


def _build(tmp: Path, path: Path, dim: int, embedder_name: str) -> None:
    """Create and migrate a new database at ``tmp`` and close it checkpointed."""
    try:
        db = kuzu.Database(str(tmp), max_db_size=MAX_DB_SIZE)
        conn = kuzu.Connection(db)
        try:
            migrate(conn, dim, embedder_name)
        finally:
            conn.close()
            db.close()
    except RuntimeError as e:
        raise StoreError(f"could not create {path}: {e}") from e
    if Path(f"{tmp}.wal").exists():  # pragma: no cover - close() checkpoints
        raise StoreError(f"could not create {path}: the new file was not checkpointed; retry")


def _remove_stale(path: Path) -> None:
    """Delete temporary files of creations whose process is gone (killed)."""
    for candidate in path.parent.glob(f".{path.name}{_CREATING}*"):
        pid_text = candidate.name[len(f".{path.name}{_CREATING}") :].split("-", 1)[0]
        try:
            os.kill(int(pid_text), 0)
            continue  # still running: another process is creating the file
        except (ValueError, ProcessLookupError):
            pass
        except PermissionError:
            continue
        with suppress(OSError):
            candidate.unlink()
