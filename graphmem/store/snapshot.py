"""A snapshot of the in-memory mirrors beside the database file, so an open need not scan it.

Opening a file rebuilds the catalogs (vector matrix, filter columns, anchor index, lexical
postings, the rows ``get_learning`` reads) from Kùzu: at 100k learnings ~2 s of the open is
Kùzu's scan and its Arrow conversion, and the scan leaves the file's pages in Kùzu's buffer pool.
When the store closes cleanly it writes those mirrors to ``<file>.mirrors`` (one file: numpy
arrays and Arrow tables at aligned offsets, a JSON manifest, a trailer), and the next open maps
that file (numpy and Arrow views over one copy-on-write memory map) instead of scanning.

Never trusted blindly:

- the trailer holds a fingerprint of the database file as it was left after the close (size,
  modification time in ns, CRC-32 of its first and last MiB, no ``.wal``), taken *before* the
  next open touches the file; any difference (a write by another process or tool, a restored
  file, a write-ahead log left by a crash) and the snapshot is ignored: the normal load runs;
- before this store's first commit (or exclusive block) it deletes the snapshot, so a kill -9
  after a commit leaves no stale snapshot behind (the deferred Application records, which change
  no mirror, do not count);
- it is written to a temporary name and renamed; a missing trailer (a truncated or half-written
  file), a bad manifest checksum, a checksum mismatch of any array but the vector matrix and the
  learning rows, another format, dimension, embedder, schema version or vector storage: ignored.

``Settings.mirror_snapshot`` (default on) turns it off; files with fewer than
``Settings.mirror_snapshot_min_rows`` learnings and events together get none. Deleting the file is always safe.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from contextlib import suppress
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from graphmem.store.anchors import AnchorRows
from graphmem.store.embed_queue import embed_queue
from graphmem.store.vectors import normalise

MAGIC = b"GRAPHMEM-MIRRORS"
FORMAT = 2
_TRAILER = struct.Struct("<QQQI8s")  # manifest offset, manifest length, print length, crc, end mark
_END = b"GMEND001"
_ALIGN = 64
_EDGE = 1 << 20  # bytes of the database file's head and tail in the fingerprint
_UNCHECKED = ("l.matrix", "l.rows")
_PRINT_BYTES = 256  # large blobs whose checksum is not verified on open


def path_of(db_path: str | os.PathLike[str]) -> Path:
    """Where the snapshot of ``db_path`` lives: ``<file>.mirrors`` beside it."""
    p = Path(db_path)
    return p.with_name(p.name + ".mirrors")


def file_print(db_path: str | os.PathLike[str]) -> dict[str, int] | None:
    """The database file's fingerprint (None when it cannot be read)."""
    try:
        st = os.stat(db_path)
        wal = Path(f"{os.fspath(db_path)}.wal")
        wal_bytes = wal.stat().st_size if wal.exists() else 0
        with open(db_path, "rb") as fh:
            head = fh.read(_EDGE)
            fh.seek(max(0, st.st_size - _EDGE))
            tail = fh.read(_EDGE)
    except OSError:
        return None
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "wal": wal_bytes,
            "head": zlib.crc32(head), "tail": zlib.crc32(tail)}


# --- writing -------------------------------------------------------------------------------------
class _Writer:
    """Blobs appended to a temporary file; :meth:`commit` adds the fingerprint and renames it."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
        self.fh = open(self.tmp, "wb")  # noqa: SIM115 -- closed by commit/abort
        self.fh.write(MAGIC.ljust(_ALIGN, b"\0"))
        self.entries: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}

    def _pad(self) -> int:
        pos = self.fh.tell()
        pad = (-pos) % _ALIGN
        if pad:
            self.fh.write(b"\0" * pad)
        return pos + pad

    def array(self, name: str, arr: np.ndarray) -> None:
        a = np.ascontiguousarray(arr)
        off = self._pad()
        data = memoryview(a).cast("B") if a.nbytes else b""  # type: ignore[arg-type]
        self.fh.write(data)
        self.entries[name] = {"kind": "array", "offset": off, "nbytes": int(a.nbytes), "dtype": a.dtype.str,
                              "shape": list(a.shape), "crc": zlib.crc32(data) if name not in _UNCHECKED else 0}

    def table(self, name: str, table: pa.Table) -> None:
        if name in _UNCHECKED:  # written straight to the file (no second copy of a large table)
            off = self._pad()
            with pa.ipc.new_file(pa.PythonFile(self.fh, mode="w"), table.schema) as w:
                w.write_table(table)
            self.entries[name] = {"kind": "table", "offset": off, "nbytes": self.fh.tell() - off, "crc": 0}
            return
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
        buf = sink.getvalue()
        off = self._pad()
        self.fh.write(memoryview(buf))
        self.entries[name] = {"kind": "table", "offset": off, "nbytes": buf.size,
                              "crc": zlib.crc32(memoryview(buf)) if name not in _UNCHECKED else 0}

    def strings(self, name: str, values: list[Any]) -> None:
        self.table(name, pa.table({"v": pa.array(values, pa.string())}))

    def codes(self, name: str, values: list[Any]) -> None:
        """Repeated strings (or None) as a vocabulary plus int32 codes (-1: None)."""
        vocab: dict[Any, int] = {}
        codes = np.fromiter((-1 if v is None else vocab.setdefault(v, len(vocab)) for v in values),
                            dtype=np.int32, count=len(values))
        self.strings(name + ".vocab", list(vocab))
        self.array(name + ".codes", codes)

    def finish_data(self) -> None:
        """Write the manifest (the data part is complete; the trailer follows in commit)."""
        self.manifest_off = self._pad()
        self.manifest = json.dumps({"format": FORMAT, "meta": self.meta, "entries": self.entries}).encode()
        self.fh.write(self.manifest)

    def commit(self, fingerprint: dict[str, int]) -> None:
        pr = _print_bytes(fingerprint)
        self.fh.write(pr)
        self.fh.write(_TRAILER.pack(self.manifest_off, len(self.manifest), len(pr),
                                    zlib.crc32(self.manifest + pr), _END))
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.tmp, self.target)

    def abort(self) -> None:
        with suppress(OSError):
            self.fh.close()
        with suppress(OSError):
            self.tmp.unlink()


def _print_bytes(fingerprint: dict[str, int]) -> bytes:
    """The fingerprint as JSON of a fixed length (so :func:`restamp` rewrites it in place)."""
    return json.dumps(fingerprint, sort_keys=True).encode().ljust(_PRINT_BYTES)


def restamp(db_path: str | os.PathLike[str]) -> bool:
    """Give the snapshot of ``db_path`` the file's current fingerprint, in place (after a close
    that wrote nothing: the mirrors are unchanged but closing touched the file). A crash in the
    middle leaves a checksum mismatch, so the snapshot is then ignored."""
    fp = file_print(db_path)
    target = path_of(db_path)
    try:
        if fp is None or fp["wal"]:
            raise ValueError("the file has a write-ahead log")
        with open(target, "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(size - _TRAILER.size)
            moff, mlen, plen, crc, end = _TRAILER.unpack(fh.read(_TRAILER.size))
            pr = _print_bytes(fp)
            if end != _END or plen != len(pr) or moff + mlen + plen + _TRAILER.size != size:
                raise ValueError("not a snapshot of this format")
            fh.seek(moff)
            manifest = fh.read(mlen)
            if zlib.crc32(manifest + fh.read(plen)) != crc:
                raise ValueError("manifest checksum")
            fh.seek(moff + mlen)
            fh.write(pr + _TRAILER.pack(moff, mlen, plen, zlib.crc32(manifest + pr), _END))
            fh.flush()
            os.fsync(fh.fileno())
    except (OSError, ValueError):
        discard(db_path)
        return False
    return True


def _lexical(w: _Writer, prefix: str, lex: Any, n: int) -> None:
    """A LexicalIndex over rows 0..n-1 (see LexicalIndex.snapshot_arrays)."""
    parts = lex.snapshot_arrays(n)
    for key in ("off", "rows", "tf", "bucket", "dl", "df_off", "df_term", "df_count"):
        w.array(f"{prefix}.{key}", parts[key])
    w.strings(prefix + ".terms", parts["terms"])
    w.strings(prefix + ".texts", parts["texts"])
    w.strings(prefix + ".users", parts["users"])
    w.meta[prefix] = {"n": parts["n"], "len": parts["len"], "k1": lex.k1, "b": lex.b}


def _anchors(w: _Writer, index: Any, n: int) -> None:
    """The AnchorIndex: vocabulary, per-row link sets (shared tuples), owners, rows, co-occurrence."""
    vocab: dict[Any, int] = {}
    sets: dict[tuple[Any, ...], int] = {}
    set_of_row = np.zeros(n, dtype=np.int32)
    for r, links in enumerate(index.of_row[:n]):
        sid = sets.get(links)
        if sid is None:
            sid = sets[links] = len(sets)
            for a in links:
                vocab.setdefault(a, len(vocab))
        set_of_row[r] = sid
    members = [vocab[a] for links in sets for a in links]
    set_off = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=set_off[1:])
    w.array("a.set_of_row", set_of_row)
    w.array("a.set_off", set_off)
    w.array("a.set_members", np.asarray(members, dtype=np.int32))
    for a in index.rows:
        vocab.setdefault(a, len(vocab))
    w.codes("a.owner", list(index.owner[:n]))
    kept = [a for a in index.rows if index.rows.size(a)]  # (no set built for a mapped anchor)
    ids = [vocab[a] for a in kept]
    lists = [index.rows.array_of(a) for a in kept]
    off = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=off[1:])
    w.array("a.rows_anchor", np.asarray(ids, dtype=np.int32))
    w.array("a.rows_off", off)
    w.array("a.rows", np.concatenate(lists) if lists else np.zeros(0, np.int64))
    owners, xs, ys, counts = [], [], [], []
    owner_names: dict[str, int] = {}
    for owner, bucket in index.cooc.items():
        code = owner_names.setdefault(owner, len(owner_names))
        for x, nbs in bucket.items():
            xi = vocab.setdefault(x, len(vocab))
            for y, c in nbs.items():
                owners.append(code)
                xs.append(xi)
                ys.append(vocab.setdefault(y, len(vocab)))
                counts.append(c)
    w.strings("a.cooc_owners", list(owner_names))
    w.array("a.cooc", np.asarray([owners, xs, ys, counts], dtype=np.int64).reshape(4, -1))
    w.strings("a.kind", [a[0] for a in vocab])
    w.strings("a.name", [a[1] for a in vocab])


def prepare(store: Any, min_rows: int) -> _Writer | None:
    """Write the mirrors of ``store`` to a temporary file (the caller holds the store exclusively,
    after the final checkpoint, with the database still open); None when there is nothing to save
    or the state cannot be snapshotted. :func:`finish` completes it after the database closed."""
    if store.path is None or store.read_only:
        return None
    lc, ec = store.learning_catalog, store.event_catalog
    n, m = len(lc), len(ec)
    if n + m < max(1, min_rows) or getattr(store, "bad_rows", []):
        return None
    if len(embed_queue(store)):
        return None
    fresh: dict[str, np.ndarray] = {}
    rows = learning_rows(store, fresh)
    if rows is None:
        return None
    w = _Writer(path_of(store.path))
    try:
        w.meta.update({"dim": store.dim, "embedder": store.embedder_name, "schema": store.schema_version,
                       "learnings": n, "events": m, "quantised": lc.vectors.quantised,
                       "e_quantised": ec.vectors.quantised})
        vec = lc.vectors
        w.strings("l.ids", list(vec.ids))
        matrix = vec._m[:n]
        if fresh and not vec.quantised:  # rows written since the open: as a read of the file keeps them
            matrix = matrix.copy()
            written = list(fresh)
            matrix[[vec.rows[i] for i in written]] = normalise(np.stack([fresh[i] for i in written]))
        w.array("l.matrix", matrix)
        w.array("l.scale", vec._scale[:n])
        w.codes("l.user", lc.user)
        w.codes("l.tool", lc.tool)
        w.array("l.cols", np.stack([lc.cols[c][:n] for c in lc.COLUMNS]))
        w.strings("l.content_key", [lc._key_of[i][1] for i in vec.ids])
        w.array("l.keys_rows", np.fromiter((vec.rows[i] for i in lc.keys.values()), dtype=np.int64, count=len(lc.keys)))
        _anchors(w, lc.anchors, n)
        _lexical(w, "l.lex", lc.lexical, n)
        w.table("l.rows", rows)
        w.strings("e.ids", list(ec.vectors.ids))
        w.array("e.matrix", ec.vectors._m[:m])  # float32 rows or int8 codes, as the event mirror holds them
        w.array("e.scale", ec.vectors._scale[:m])
        w.codes("e.user", ec.user)
        _lexical(w, "e.lex", ec.lexical, m)
        w.finish_data()
    except BaseException:
        w.abort()
        raise
    return w


def finish(writer: _Writer, db_path: str | os.PathLike[str]) -> bool:
    """Stamp the snapshot with the closed file's fingerprint and move it into place."""
    fp = file_print(db_path)
    if fp is None or fp["wal"]:
        writer.abort()
        return False
    try:
        writer.commit(fp)
    except OSError:
        writer.abort()
        return False
    return True


def learning_rows(store: Any, embeddings: dict[str, np.ndarray] | None = None) -> pa.Table | None:
    """The rows ``get_learning`` reads, aligned with the catalog's rows: those read on open for
    learnings not written since, the others read again from the file (store held exclusively;
    their stored embeddings go to ``embeddings``)."""
    ids = store.learning_catalog.ids
    base: pa.Table | None = getattr(store, "_loaded_rows", None)
    index: dict[str, int] = getattr(store, "_loaded_index", None) or {}
    dirty: set[str] = getattr(store, "_dirty_ids", set())
    if base is None:
        return None
    pos = np.fromiter((-1 if i in dirty else index.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
    if pos.shape[0] == base.num_rows and np.array_equal(pos, np.arange(base.num_rows)):
        return base  # nothing written since the open: the loaded rows, in the catalog's order
    missing = [ids[r] for r in np.flatnonzero(pos < 0).tolist()]
    if missing:
        projection = ", ".join(f"l.{c} AS {c}" for c in base.column_names)  # the load's (LEARNING_PROPS)
        fetched: list[dict[str, Any]] = []
        for start in range(0, len(missing), 2000):
            fetched.extend(store._run(store._conn_main, "UNWIND $ids AS i MATCH (l:Learning {id: i}) "
                                      f"RETURN {projection}, l.embedding AS embedding", {"ids": missing[start : start + 2000]}))
        if len(fetched) != len(missing):
            return None
        for r in fetched:
            emb = r.pop("embedding")
            if embeddings is not None:
                embeddings[r["id"]] = np.asarray(emb, dtype=np.float32)
        extra = pa.Table.from_pylist(fetched, schema=base.schema)
        order = {r["id"]: j for j, r in enumerate(fetched)}
        pos[pos < 0] = [base.num_rows + order[i] for i in missing]
        base = pa.concat_tables([base, extra])
    return base.take(pa.array(pos)).combine_chunks()


# --- reading -------------------------------------------------------------------------------------
class _Reader:
    """Views over one copy-on-write memory map of a snapshot file."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as fh:
            self.mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_COPY)
        size = len(self.mm)
        if size < _ALIGN + _TRAILER.size or self.mm[: len(MAGIC)] != MAGIC:
            raise ValueError("not a snapshot")
        moff, mlen, plen, crc, end = _TRAILER.unpack_from(self.mm, size - _TRAILER.size)
        if end != _END or moff + mlen + plen + _TRAILER.size != size:
            raise ValueError("truncated")
        manifest, pr = self.mm[moff : moff + mlen], self.mm[moff + mlen : moff + mlen + plen]
        if zlib.crc32(manifest + pr) != crc:
            raise ValueError("manifest checksum")
        doc = json.loads(manifest)
        if doc.get("format") != FORMAT:
            raise ValueError("format")
        self.meta: dict[str, Any] = doc["meta"]
        self.entries: dict[str, dict[str, Any]] = doc["entries"]
        self.fingerprint: dict[str, int] = json.loads(pr)
        self.end = moff
        self.buf = pa.py_buffer(self.mm)
        self._released: set[str] = set()

    def _bytes(self, name: str) -> memoryview:
        e = self.entries[name]
        off, nb = int(e["offset"]), int(e["nbytes"])
        if off + nb > self.end:
            raise ValueError(f"{name} lies outside the data")
        view = memoryview(self.mm)[off : off + nb]
        if name not in _UNCHECKED:
            if zlib.crc32(view) != e["crc"]:
                raise ValueError(f"{name} checksum")
            self._release(name, off, nb)
        return view

    def _release(self, name: str, off: int, nb: int) -> None:
        """Give back the pages the checksum just read (the first time only, before anything could
        write to them): they stay in the page cache and map again when a query reads them, so
        the process does not keep the whole snapshot resident after the open (~500 MB at 1M
        learnings). Only pages wholly inside the entry: a shared edge page may be written."""
        if name in self._released or not hasattr(mmap, "MADV_DONTNEED"):
            return
        self._released.add(name)
        start = -(-off // mmap.PAGESIZE) * mmap.PAGESIZE
        stop = (off + nb) // mmap.PAGESIZE * mmap.PAGESIZE
        if stop > start:
            with suppress(OSError, ValueError):
                self.mm.madvise(mmap.MADV_DONTNEED, start, stop - start)

    def array(self, name: str) -> np.ndarray:
        e = self.entries[name]
        view = self._bytes(name)
        count = int(np.prod(e["shape"])) if e["shape"] else 1
        return np.frombuffer(view, dtype=np.dtype(e["dtype"]), count=count).reshape(e["shape"])

    def table(self, name: str) -> pa.Table:
        e = self.entries[name]
        self._bytes(name)
        return pa.ipc.open_file(pa.BufferReader(self.buf.slice(int(e["offset"]), int(e["nbytes"])))).read_all()

    def strings(self, name: str) -> list[Any]:
        return list(self.table(name).column(0).to_pylist())

    def string_array(self, name: str) -> pa.Array:
        """The strings as one Arrow array over the map (no Python string each)."""
        column = self.table(name).column(0)
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()

    def codes(self, name: str) -> list[Any]:
        names = self.strings(name + ".vocab")
        names.append(None)
        return [names[c] for c in self.array(name + ".codes").tolist()]


def _load_lexical(r: _Reader, prefix: str, lex: Any) -> None:
    parts = {key: r.array(f"{prefix}.{key}") for key in ("off", "rows", "tf", "bucket", "dl", "df_off", "df_term", "df_count")}
    meta = r.meta[prefix]
    lex.load_snapshot_arrays(dict(parts, terms=r.strings(prefix + ".terms"), texts=r.string_array(prefix + ".texts"),
                                  users=r.strings(prefix + ".users"), n=meta["n"], len=meta["len"]))


def _load_anchors(r: _Reader, index: Any) -> None:
    kinds, names = r.strings("a.kind"), r.strings("a.name")
    interned_kinds = {k: k for k in kinds}
    vocab = [(interned_kinds[k], v) for k, v in zip(kinds, names)]
    set_off, members = r.array("a.set_off"), r.array("a.set_members").tolist()
    off = set_off.tolist()
    sets = [tuple(vocab[a] for a in members[off[i] : off[i + 1]]) for i in range(len(off) - 1)]
    index.of_row = [sets[s] for s in r.array("a.set_of_row").tolist()]
    index.owner = r.codes("a.owner")
    rows_anchor, rows_off, rows = r.array("a.rows_anchor").tolist(), r.array("a.rows_off").tolist(), r.array("a.rows")
    index.rows = AnchorRows({vocab[a]: rows[rows_off[i] : rows_off[i + 1]] for i, a in enumerate(rows_anchor)})
    index._arrays = {}
    owners = r.strings("a.cooc_owners")
    cooc = r.array("a.cooc")
    out: dict[str, dict[Any, dict[Any, int]]] = {}
    for o, x, y, c in zip(*(cooc[i].tolist() for i in range(4))):
        bucket = out.get(owners[o])
        if bucket is None:
            bucket = out[owners[o]] = {}
        nbs = bucket.get(vocab[x])
        if nbs is None:
            nbs = bucket[vocab[x]] = {}
        nbs[vocab[y]] = c
    index.cooc = out


def load(store: Any, fingerprint: dict[str, int] | None) -> bool:
    """Fill the store's catalogs from its snapshot; False (nothing changed) when there is none or
    it does not match ``fingerprint`` (the database file's, taken before it was opened) or this
    store. The caller holds the store exclusively."""
    if store.path is None or fingerprint is None or fingerprint.get("wal"):
        return False
    target = path_of(store.path)
    if not target.exists():
        return False
    try:
        r = _Reader(target)
        if r.fingerprint != fingerprint or store._wal_bytes():
            return False
        meta = r.meta
        lc, ec = store.learning_catalog, store.event_catalog
        if (meta.get("dim"), meta.get("embedder"), meta.get("schema")) != (store.dim, store.embedder_name, store.schema_version):
            return False
        n, m = int(meta["learnings"]), int(meta["events"])
        if bool(meta["quantised"]) != lc.vectors._want_int8(n):
            return False  # another storage asked for: the file's vectors, as a fresh load keeps them
        if bool(meta.get("e_quantised", False)) != ec.vectors._want_int8(m):
            return False  # the same for the event mirror
        ids = r.strings("l.ids")
        matrix, scale = r.array("l.matrix"), r.array("l.scale")
        users, tools = r.codes("l.user"), r.codes("l.tool")
        cols = r.array("l.cols")
        keys = r.strings("l.content_key")
        keys_rows = r.array("l.keys_rows").tolist()
        rows = r.table("l.rows")
        e_ids, e_matrix, e_users = r.strings("e.ids"), r.array("e.matrix"), r.codes("e.user")
        e_scale = r.array("e.scale")
        if not (len(ids) == matrix.shape[0] == len(users) == len(tools) == len(keys) == cols.shape[1] == rows.num_rows == n
                and len(e_ids) == e_matrix.shape[0] == len(e_users) == e_scale.shape[0] == m and matrix.shape[1:] == (store.dim,)):
            return False
        # from here on the catalogs change: a failure reloads from the file (KuzuGraphStore)
        lc.vectors.load_snapshot(ids, matrix, scale)
        lc.user, lc.tool = users, tools
        lc.generation += 1
        lc.cols = {}
        for i, name in enumerate(lc.COLUMNS):
            arr = np.zeros(max(16, n), dtype=np.float64)
            arr[:n] = cols[i]
            lc.cols[name] = arr
        pairs = [(u, k) for u, k in zip(users, keys)]
        lc._key_of = dict(zip(ids, pairs))
        lc.keys = {pairs[row]: ids[row] for row in keys_rows}
        _load_anchors(r, lc.anchors)
        _load_lexical(r, "l.lex", lc.lexical)
        ec.generation += 1
        ec.vectors.load_snapshot(e_ids, e_matrix, e_scale)
        ec.user = e_users
        _load_lexical(r, "e.lex", ec.lexical)
        store._loaded_rows = rows
        store._loaded_index = dict(lc.vectors.rows)  # a copy: the mirror's rows move on removes
        store._dirty_ids = set()
        store.bad_rows = []
        embed_queue(store).clear()
    except (OSError, ValueError, KeyError, TypeError, IndexError, pa.ArrowException, json.JSONDecodeError):
        return False
    return True


def discard(db_path: str | os.PathLike[str]) -> None:
    """Delete the snapshot of ``db_path`` (before a write makes it stale; always safe)."""
    with suppress(OSError):
        path_of(db_path).unlink()


def discard_temporaries(db_path: str | os.PathLike[str]) -> None:
    """Delete half-written snapshots a killed process left beside ``db_path`` (on a writable open:
    only the process that holds the file writes one)."""
    target = path_of(db_path)
    for tmp in target.parent.glob(target.name + ".tmp*"):
        with suppress(OSError):
            tmp.unlink()


__all__ = ["FORMAT", "discard", "discard_temporaries", "file_print", "finish", "learning_rows", "load", "path_of", "prepare", "restamp"]
