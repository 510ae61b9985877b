"""Kùzu's Cypher as openCypher: the few functions graphmem's mixins use that other engines name
differently, and the values that cross the Bolt wire.

graphmem's store mixins are written for Kùzu. Most of their Cypher is plain openCypher; the rest
is rewritten here, per statement, before it is sent (the result is cached per statement text):

==========================  ======================================
Kùzu                        openCypher (Neo4j, Memgraph, ArcadeDB)
==========================  ======================================
``list_contains(a, x)``     ``(x IN coalesce(a, []))``
``list_append(a, x)``       ``(coalesce(a, []) + [x])``
``list_slice(a, b, e)``     ``a[(b) - 1..(e) - 1]`` (Kùzu: 1-based, end exclusive; the end
                            capped at 2**31 - 1, past which ArcadeDB returns no element)
``list_intersect(a, b)``    ``[x IN a WHERE x IN b]``
``CAST(v AS STRING[])``     ``v`` (lists are untyped)
``label(n)``                ``labels(n)[0]``
``contains(s, t)``          ``(s CONTAINS t)``
``offset(id(n))``           ``0`` (Kùzu's insertion order, a tie-breaker: rows the
                            server returns keep its order instead)
==========================  ======================================

Kùzu's catalog calls (``CALL show_tables()``, ``CALL table_info('T')``,
``CALL show_connection('R')``) are answered from graphmem's schema files instead
(:mod:`graphmem.store.bolt.schema`), since a Bolt engine has no typed tables.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import UTC, date, datetime
from typing import Any

_FUNCS = ("list_contains", "list_append", "list_slice", "list_intersect", "label", "contains", "offset")
_CALL = re.compile(r"\b(" + "|".join(_FUNCS) + r")\s*\(", re.IGNORECASE)
_CAST_LIST = re.compile(r"\bCAST\s*\(", re.IGNORECASE)


_INT32_MAX = 2**31 - 1


def _clamp(expr: str) -> str:
    """``expr`` capped at 2**31 - 1 (a list index every engine reads)."""
    return f"CASE WHEN {expr} > {_INT32_MAX} THEN {_INT32_MAX} ELSE {expr} END"


def _args(text: str, start: int) -> tuple[list[str], int]:
    """The comma-separated arguments of a call whose "(" is at ``start - 1``; and the index after ")"."""
    depth, args, cur, i, quote = 0, [], [], start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch in "([{":
            depth += 1
            cur.append(ch)
        elif ch in ")]}":
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    raise ValueError(f"unbalanced parentheses in {text!r}")


def _rewrite_call(name: str, args: list[str]) -> str | None:
    name = name.lower()
    if name == "list_contains" and len(args) == 2:
        return f"({args[1]} IN coalesce({args[0]}, []))"
    if name == "list_append" and len(args) == 2:
        return f"(coalesce({args[0]}, []) + [{args[1]}])"
    if name == "list_slice" and len(args) == 3:
        # ArcadeDB reads slice bounds as 32-bit ints (a bound past 2**31 - 1 gives an empty list):
        # the end is clamped there, which no list reaches
        return f"{args[0]}[({args[1]}) - 1..{_clamp(f'({args[2]}) - 1')}]"
    if name == "list_intersect" and len(args) == 2:
        return f"[_x IN coalesce({args[0]}, []) WHERE _x IN coalesce({args[1]}, [])]"
    if name == "offset" and len(args) == 1 and re.fullmatch(r"id\(\s*\w+\s*\)", args[0]):
        return "0"  # Kùzu's insertion offset, a tie-breaker; no portable equivalent
    if name == "contains" and len(args) == 2:
        return f"({args[0]} CONTAINS {args[1]})"
    if name == "label" and len(args) == 1:
        return f"labels({args[0]})[0]"
    return None


@functools.lru_cache(maxsize=2048)
def translate(cypher: str) -> str:
    """``cypher`` (as graphmem's Kùzu mixins write it) in openCypher; unchanged when portable."""
    out = cypher
    pos = 0
    for _ in range(200):
        m = _CALL.search(out, pos)
        if m is None:
            break
        if m.start() > 0 and (out[m.start() - 1].isalnum() or out[m.start() - 1] in "_."):
            pos = m.end()  # part of a longer name (e.g. ``n.label(``): nothing of ours
            continue
        args, end = _args(out, m.end())
        new = _rewrite_call(m.group(1), [translate(a) for a in args])
        if new is None:  # e.g. the CONTAINS operator before a parenthesis: leave it
            pos = m.end()
            continue
        out = out[: m.start()] + new + out[end:]
        pos = m.start()
    while True:
        m = _CAST_LIST.search(out)
        if m is None:
            break
        args, end = _args(out, m.end())
        inner = args[0] if args else ""
        cm = re.fullmatch(r"(.*)\s+AS\s+\w+\s*\[\s*\]", inner, re.IGNORECASE | re.DOTALL)
        if cm is None:
            break
        out = out[: m.start()] + translate(cm.group(1).strip()) + out[end:]
    return out


#: parameters (and map keys) by this name holding numbers are sent as float32 bytes
VECTOR_KEYS = frozenset({"embedding"})


def _vector_bytes(value: Any) -> Any:
    import numpy as np

    if value is None or isinstance(value, bytes | str):
        return value
    try:
        return np.asarray(value, dtype="<f4").tobytes()
    except (TypeError, ValueError):
        return to_wire(value)


def to_wire(value: Any) -> Any:
    """A parameter value as sent over Bolt: naive datetimes (graphmem's "UTC without an offset",
    Kùzu's form) become aware UTC ones; numpy scalars and arrays plain Python; an ``embedding``
    becomes little-endian float32 bytes (reading 1,000 384-dim vectors as Bolt lists of floats
    takes ~1 s in the driver, as bytes ~0.1 s; :func:`from_wire` turns them back into lists)."""
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    if isinstance(value, Mapping):
        return {str(k): _vector_bytes(v) if k in VECTOR_KEYS else to_wire(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_wire(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):  # numpy
        return to_wire(value.tolist())
    return value


def from_wire(value: Any) -> Any:
    """A value read over Bolt as Kùzu's Python API gives it: temporal values as naive UTC
    ``datetime`` (Kùzu's TIMESTAMP), lists and maps converted inside."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, bytes):  # a vector sent by to_wire
        import numpy as np

        return np.frombuffer(value, dtype="<f4").tolist()
    if isinstance(value, list):
        return [from_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: from_wire(v) for k, v in value.items()}
    to_native = getattr(value, "to_native", None)
    if to_native is not None:
        native = to_native()
        if isinstance(native, datetime):
            if native.tzinfo is not None:
                native = native.astimezone(UTC).replace(tzinfo=None)
            return native
        if isinstance(native, date):
            return native
        return native
    return value
