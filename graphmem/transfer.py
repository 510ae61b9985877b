"""Move one user's memory between files (and graphmem versions): a JSONL dump and its import.

``Memory.export_memory(path)`` writes, one JSON object per line:

1. a header ``{"format": "graphmem-memory", "version": 1, "user", "embedder", "dims",
   "schema_version", "exported_at", "counts"}``;
2. every node the user owns, with all its properties and vectors
   (``{"type": "node", "label": "Learning", "properties": {...}}``): learnings with their
   helpful/harmful counters, status, tier and confidence, their transitions, events, objectives,
   contexts handed out (applications) and their outcomes, patterns, traces, summaries...;
   the tools, topics, entities and objective types they point to (by name);
3. every edge between them (``{"type": "edge", "rel", "from": [label, key], "to": [label, key],
   "properties": {...}}``).

``Memory.import_memory(path)`` reads such a file into the Memory's database, as the Memory's user:
the whole file is checked first (JSON on every line, the format and version, the embedder and its
dimensions, every label, property and value against the schema, no id the database already
holds), then written in one transaction, so bad input leaves the database as it was.
Co-occurrence counts (RELATED) are recomputed rather than copied; a tool's success/error counters
are shared by every user of a file and stay those of the target file.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from graphmem.errors import InvalidInputError
from graphmem.jsonl import read_objects
from graphmem.models import utcnow
from graphmem.store import transfer as store_transfer
from graphmem.store.transfer import Progress

if TYPE_CHECKING:
    from graphmem.deps import Deps

FORMAT = "graphmem-memory"
VERSION = 1


class TransferReport(BaseModel):
    """What an export or an import of a memory moved."""

    path: str
    user: str
    from_user: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)  # nodes per label
    edges: int = 0


def export_memory(deps: Deps, path: str | os.PathLike[str], *, progress: Progress | None = None) -> TransferReport:
    """Write the user's whole memory to ``path`` as JSONL (see the module docstring)."""
    from graphmem.export import _target

    target = _target(path)
    records = list(store_transfer.dump_rows(deps.store, deps.user))
    counts = Counter(r["label"] for r in records if r["type"] == "node")
    edges = sum(1 for r in records if r["type"] == "edge")
    header = {
        "format": FORMAT, "version": VERSION, "user": deps.user, "embedder": deps.embedder.name,
        "dims": deps.embedder.dim, "schema_version": deps.store.schema_version,
        "exported_at": utcnow().isoformat(), "counts": dict(counts), "edges": edges,
    }
    tmp = target.with_name(target.name + ".part")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(json.dumps(header, ensure_ascii=False) + "\n")
        for i, r in enumerate(records, start=1):
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
            if progress is not None and (i % 500 == 0 or i == len(records)):
                progress(i, len(records))
    os.replace(tmp, target)
    return TransferReport(path=str(target), user=deps.user, counts=dict(counts), edges=edges)


def read_dump(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The header and the (line number, record) pairs of a memory export; InvalidInputError
    naming the line for anything that is not one."""
    source = Path(path)
    header: dict[str, Any] | None = None
    records: list[tuple[int, dict[str, Any]]] = []
    for number, item in read_objects(source, not_json_hint="the file is damaged or not a memory export"):
        if header is None:
            header = item
            _check_header(source, header)
        else:
            records.append((number, item))
    if header is None:
        raise InvalidInputError(f"{source} is empty; export a memory with `graphmem export --memory FILE`")
    return header, records


def _check_header(source: Path, header: dict[str, Any]) -> None:
    if header.get("format") != FORMAT:
        hint = (" (this looks like training pairs from `export --jsonl`, which cannot be imported)"
                if "messages" in header else "")
        raise InvalidInputError(
            f"{source} is not a graphmem memory export{hint}: write one with `graphmem export --memory FILE` "
            "(Memory.export_memory)"
        )
    if header.get("version") != VERSION:
        raise InvalidInputError(
            f"{source} has export format version {header.get('version')!r}; this graphmem reads version "
            f"{VERSION}: import it with the graphmem version that wrote it, or a newer one"
        )


def import_memory(deps: Deps, path: str | os.PathLike[str], *, progress: Progress | None = None) -> TransferReport:
    """Read a memory export into ``deps``'s database as ``deps.user``, all or nothing."""
    header, records = read_dump(path)
    dims, name = header.get("dims"), header.get("embedder")
    if dims != deps.embedder.dim or name != deps.embedder.name:
        raise InvalidInputError(
            f"{path} was exported with embedder {name!r} ({dims} dims), but this database uses "
            f"{deps.embedder.name!r} ({deps.embedder.dim} dims): import into a file opened with the same "
            "embedder (CLI: --embedder)"
        )
    old_user = str(header.get("user") or deps.user)
    nodes, edges = store_transfer.prepare(deps.store, records, old_user=old_user, new_user=deps.user)
    store_transfer.load_rows(deps.store, nodes, edges, user=deps.user, progress=progress)
    deps.store.reload_catalogs()
    counts = Counter(label for label, _ in nodes)
    return TransferReport(path=str(path), user=deps.user, from_user=old_user, counts=dict(counts), edges=len(edges))
