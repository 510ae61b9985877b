"""Queries of the auto-tuner and the session metrics: TuningSnapshot, TunedSettings, health counts.

:mod:`graphmem.tuning` and :mod:`graphmem.sessions` hold the logic; every Cypher statement they
need is here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from graphmem.errors import NotFoundError
from graphmem.store.kuzu_store import KuzuBase, dumps, from_db_time, loads, to_db_time

_SNAPSHOT_PROPS = (
    "id", "user_id", "created_at", "settings", "changes", "health", "p5_before", "noise_before", "p5_after",
    "noise_after", "status", "reason", "restored_at",
)
_SNAPSHOT_RETURN = ", ".join(f"s.{p} AS {p}" for p in _SNAPSHOT_PROPS)
_JSON_PROPS: dict[str, Any] = {"settings": {}, "changes": [], "health": {}}
# An Application's verdict (graphmem.outcomes.verdict_of): the rating decides when given, else the outcome.
_ACCEPTED = "(a.rating = 'good' OR (a.rating IS NULL AND a.outcome = 'success'))"
_REJECTED = "(a.rating = 'bad' OR (a.rating IS NULL AND a.outcome = 'failure'))"
_NEUTRAL = "(a.rating = 'okay')"


def _snapshot_from_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key, default in _JSON_PROPS.items():
        out[key] = loads(out[key], default)
    out["created_at"] = from_db_time(out["created_at"])
    out["restored_at"] = from_db_time(out["restored_at"])
    return out


class TuningStore(KuzuBase):
    """Tuning snapshots, the persisted tuned values, and the counts health and sessions read."""

    # --- snapshots and tuned values ------------------------------------------------------------
    def insert_tuning_snapshot(self, snapshot: Mapping[str, Any]) -> None:
        """Write one TuningSnapshot (keys as in the schema; JSON-valued ones as Python values)."""
        params = {p: snapshot.get(p) for p in _SNAPSHOT_PROPS}
        for key, default in _JSON_PROPS.items():
            params[key] = dumps(params[key] if params[key] is not None else default)
        params["created_at"] = to_db_time(params["created_at"])
        params["restored_at"] = to_db_time(params["restored_at"])
        props = ", ".join(f"{p}: ${p}" for p in params)
        self.write(f"CREATE (s:TuningSnapshot {{{props}}})", params)

    def finish_tuning_snapshot(
        self, snapshot_id: str, *, status: str, p5_after: float | None, noise_after: int | None, reason: str
    ) -> None:
        """Record what became of a tuning step: its status, the guard after it, and why."""
        self.write(
            "MATCH (s:TuningSnapshot {id: $id}) SET s.status = $status, s.p5_after = $p5, "
            "s.noise_after = $noise, s.reason = $reason",
            {"id": snapshot_id, "status": status, "p5": p5_after, "noise": noise_after, "reason": reason},
        )

    def mark_tuning_restored(self, snapshot_id: str, at: datetime) -> None:
        """Mark a snapshot as restored by hand."""
        self.write("MATCH (s:TuningSnapshot {id: $id}) SET s.status = 'restored', s.restored_at = $ts",
                   {"id": snapshot_id, "ts": to_db_time(at)})

    def get_tuning_snapshot(self, snapshot_id: str) -> dict[str, Any]:
        """One snapshot as a dict; NotFoundError when there is none with that id."""
        rows = self.read(f"MATCH (s:TuningSnapshot {{id: $id}}) RETURN {_SNAPSHOT_RETURN}", {"id": snapshot_id})
        if not rows:
            raise NotFoundError(f"no tuning snapshot with id {snapshot_id!r}; `graphmem tune --history` lists them")
        return _snapshot_from_row(rows[0])

    def tuning_snapshots(self, user_id: str, limit: int = 10) -> list[dict[str, Any]]:
        """The user's snapshots, newest first."""
        rows = self.read(
            f"MATCH (s:TuningSnapshot) WHERE s.user_id = $u RETURN {_SNAPSHOT_RETURN} "
            "ORDER BY s.created_at DESC, s.id DESC LIMIT $n",
            {"u": user_id, "n": int(limit)},
        )
        return [_snapshot_from_row(r) for r in rows]

    def prune_tuning_snapshots(self, user_id: str, keep: int) -> int:
        """Delete all but the newest ``keep`` snapshots of the user; returns how many went."""
        rows = self.read(
            "MATCH (s:TuningSnapshot) WHERE s.user_id = $u RETURN s.id AS id ORDER BY s.created_at DESC, s.id DESC",
            {"u": user_id},
        )
        old = [r["id"] for r in rows[keep:]]
        if old:
            self.write("MATCH (s:TuningSnapshot) WHERE s.id IN $ids DELETE s", {"ids": old})
        return len(old)

    def tuned_settings(self, user_id: str) -> dict[str, Any] | None:
        """The tuned values persisted for the user (name -> value), None when never tuned."""
        rows = self.read("MATCH (t:TunedSettings {id: $u}) RETURN t.settings AS settings", {"u": user_id})
        if not rows:
            return None
        values = loads(rows[0]["settings"], {})
        return values if isinstance(values, dict) else None

    def set_tuned_settings(
        self, user_id: str, values: Mapping[str, Any], snapshot_id: str | None, at: datetime,
        reference_p5: float | None = None,
    ) -> None:
        """Persist the tuned values in effect for the user (``reference_p5`` is kept once set)."""
        self.write(
            "MERGE (t:TunedSettings {id: $u}) SET t.user_id = $u, t.settings = $v, t.snapshot_id = $sid, "
            "t.updated_at = $ts, t.reference_p5 = coalesce(t.reference_p5, $ref)",
            {"u": user_id, "v": dumps(dict(values)), "sid": snapshot_id, "ts": to_db_time(at),
             "ref": None if reference_p5 is None else float(reference_p5)},
        )

    def tuning_reference_p5(self, user_id: str) -> float | None:
        """The guard's P@5 before the user's first tuning step (None before any)."""
        rows = self.read("MATCH (t:TunedSettings {id: $u}) RETURN t.reference_p5 AS p5", {"u": user_id})
        return None if not rows or rows[0]["p5"] is None else float(rows[0]["p5"])

    # --- health ------------------------------------------------------------------------------
    def context_health(self, user_id: str, since: datetime) -> dict[str, int]:
        """Contexts served since ``since``: how many, how many rated accepted / rejected / neutral,
        and how many learnings they showed in all."""
        params = {"u": user_id, "since": to_db_time(since)}
        row = self.read(
            "MATCH (a:Application) WHERE a.user_id = $u AND a.created_at >= $since "
            "RETURN count(a) AS contexts, "
            f"sum(CASE WHEN {_ACCEPTED} THEN 1 ELSE 0 END) AS accepted, "
            f"sum(CASE WHEN {_REJECTED} THEN 1 ELSE 0 END) AS rejected, "
            f"sum(CASE WHEN {_NEUTRAL} THEN 1 ELSE 0 END) AS neutral",
            params,
        )[0]
        shown = self.read(
            "MATCH (:Learning)-[r:APPLIED_IN]->(a:Application) WHERE a.user_id = $u AND a.created_at >= $since "
            "RETURN count(r) AS shown",
            params,
        )[0]["shown"]
        out = {k: int(row[k] or 0) for k in ("contexts", "accepted", "rejected", "neutral")}
        out["shown"] = int(shown or 0)
        return out

    def status_moves(self, user_id: str, since: datetime) -> list[tuple[str, str, int]]:
        """(old status, new status, count) of the user's status transitions since ``since``."""
        rows = self.read(
            "MATCH (l:Learning)-[:HAS_TRANSITION]->(t:Transition) WHERE l.user_id = $u AND t.field = 'status' "
            "AND t.created_at >= $since RETURN t.old AS old, t.new AS new, count(t) AS n",
            {"u": user_id, "since": to_db_time(since)},
        )
        return [(str(r["old"]), str(r["new"]), int(r["n"])) for r in rows]

    def status_counts(self, user_id: str) -> dict[str, int]:
        """The user's own learnings per status."""
        rows = self.read(
            "MATCH (l:Learning) WHERE l.user_id = $u RETURN l.status AS status, count(l) AS n", {"u": user_id}
        )
        return {str(r["status"]): int(r["n"]) for r in rows}

    # --- sessions ----------------------------------------------------------------------------
    def recent_sessions(self, user_id: str, limit: int) -> list[str]:
        """The user's session ids with the latest activity first (events, contexts or traces)."""
        last: dict[str, datetime] = {}
        for table in ("Event", "Application", "Trace"):
            rows = self.read(
                f"MATCH (n:{table}) WHERE n.user_id = $u AND n.session_id IS NOT NULL "
                "RETURN n.session_id AS sid, max(n.created_at) AS last",
                {"u": user_id},
            )
            for r in rows:
                when = from_db_time(r["last"])
                if when is not None and (r["sid"] not in last or when > last[r["sid"]]):
                    last[r["sid"]] = when
        return [sid for sid, _ in sorted(last.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)[:limit]]

    def session_rows(self, user_id: str, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Raw per-session counts for :mod:`graphmem.sessions` (the queries README "Session metrics" shows)."""
        params = {"u": user_id, "sids": list(session_ids)}
        out: dict[str, dict[str, Any]] = {
            sid: {"events": 0, "contexts": 0, "accepted": 0, "rejected": 0, "neutral": 0, "shown": set(),
                  "used": set(), "created": set(), "traces": 0, "traces_passed": 0, "judges": {},
                  "first": None, "last": None}
            for sid in session_ids
        }
        if not session_ids:
            return out

        def seen(sid: str, first: Any, last: Any) -> None:
            a, b = from_db_time(first), from_db_time(last)
            o = out[sid]
            if a is not None and (o["first"] is None or a < o["first"]):
                o["first"] = a
            if b is not None and (o["last"] is None or b > o["last"]):
                o["last"] = b

        for r in self.read(
            "MATCH (e:Event) WHERE e.user_id = $u AND e.session_id IN $sids RETURN e.session_id AS sid, "
            "count(e) AS n, min(e.created_at) AS first, max(e.created_at) AS last", params,
        ):
            out[r["sid"]]["events"] = int(r["n"])
            seen(r["sid"], r["first"], r["last"])
        for r in self.read(
            "MATCH (a:Application) WHERE a.user_id = $u AND a.session_id IN $sids RETURN a.session_id AS sid, "
            "count(a) AS n, min(a.created_at) AS first, max(a.created_at) AS last, "
            f"sum(CASE WHEN {_ACCEPTED} THEN 1 ELSE 0 END) AS accepted, "
            f"sum(CASE WHEN {_REJECTED} THEN 1 ELSE 0 END) AS rejected, "
            f"sum(CASE WHEN {_NEUTRAL} THEN 1 ELSE 0 END) AS neutral", params,
        ):
            o = out[r["sid"]]
            o.update(contexts=int(r["n"]), accepted=int(r["accepted"] or 0), rejected=int(r["rejected"] or 0),
                     neutral=int(r["neutral"] or 0))
            seen(r["sid"], r["first"], r["last"])
        for r in self.read(
            "MATCH (l:Learning)-[r:APPLIED_IN]->(a:Application) WHERE a.user_id = $u AND a.session_id IN $sids "
            "RETURN a.session_id AS sid, l.id AS id, r.verdict AS verdict", params,
        ):
            out[r["sid"]]["shown"].add(r["id"])
            if r["verdict"] is not None and r["verdict"] != "none":
                out[r["sid"]]["used"].add(r["id"])
        for table in ("Event", "Trace"):
            for r in self.read(
                f"MATCH (l:Learning)-[:DERIVED_FROM]->(n:{table}) WHERE n.user_id = $u AND n.session_id IN $sids "
                "RETURN n.session_id AS sid, l.id AS id", params,
            ):
                out[r["sid"]]["created"].add(r["id"])
        for r in self.read(
            "MATCH (t:Trace) WHERE t.user_id = $u AND t.session_id IN $sids RETURN t.session_id AS sid, "
            "count(t) AS n, sum(CASE WHEN t.passed THEN 1 ELSE 0 END) AS passed, "
            "min(t.created_at) AS first, max(t.created_at) AS last", params,
        ):
            out[r["sid"]].update(traces=int(r["n"]), traces_passed=int(r["passed"] or 0))
            seen(r["sid"], r["first"], r["last"])
        for r in self.read(
            "MATCH (t:Trace)-[:JUDGED]->(v:Verdict) WHERE t.user_id = $u AND t.session_id IN $sids "
            "RETURN t.session_id AS sid, v.judge AS judge, count(v) AS n, "
            "sum(CASE WHEN v.passed THEN 1 ELSE 0 END) AS passed", params,
        ):
            out[r["sid"]]["judges"][str(r["judge"])] = (int(r["passed"] or 0), int(r["n"]))
        return out
