"""The `SkillTelemetry` port over the skill tables of `sessions.db` (schema steps 5 and 6).

It shares the store's connection, lock and transactions (`SqliteStorage.read()` /
`transaction()`), like `SqliteVectorStore`: every write is one short BEGIN IMMEDIATE, every
read a deferred snapshot, and driver errors leave as the library's `StorageFailed` family.

The SQL is portable (ON CONFLICT, RETURNING, TRUE): the PostgreSQL adapter runs this class
through a connection shim (adapters/postgres/skill_tables.py); `_plumbing` and `_BY_AT` are its
hooks.

`skill_load_events` is read-only history: this adapter only reads it and deletes expired
rows from it. Its `at` is read as UTC text (`YYYY-MM-DD...`): its day is the first ten
characters. The cleanup deletes `LIMIT budget` rows per table by rowid over the day/at
indexes, oldest first, so a run is a bounded transaction whatever the table size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any, Final

import apsw
from pi_hermes_memory.adapters.sqlite.failures import map_error
from pi_hermes_memory.errors import CorruptData
from pi_hermes_memory.ports.skills import (
    CLEANUP_INTERVAL,
    STALE_REASON,
    CleanupReport,
    CurationJob,
    CurationKind,
    CurationLimits,
    CurationRefusal,
    CurationStatus,
    GovernanceRecord,
    JobLease,
    JobState,
    PolicyOverrides,
    SkillStatRow,
    SkillVisibility,
    UsageFields,
    UsageRecord,
    aware,
    checked_governance,
    checked_limits,
    checked_overrides,
    checked_usage,
    choice,
    count,
    finished_state,
    name,
    optional_name,
    since_day,
    utc_day,
)
from pi_hermes_memory.skills.curation_lease import LeaseFacts, is_stale, refusal

__all__ = ["CLEANUP_KEY", "SqliteSkillTables", "utc_text"]

#: the `store_meta` key holding the time of the last load cleanup
CLEANUP_KEY: Final = "skill_load_cleanup_at"
_TIME: Final = "%Y-%m-%dT%H:%M:%S.%fZ"
_ACTIVE: Final = "('queued', 'running')"
_JOB_COLUMNS: Final = "id, project, kind, state, reason, created_at, updated_at, finished_at"


def utc_text(at: datetime) -> str:
    """The stored form of a time: UTC, fixed width, so text order is time order."""
    return at.astimezone(UTC).strftime(_TIME)


def _time(text: str) -> datetime:
    """A stored time. Ours are `_TIME`; a row written by another writer (the TypeScript
    extension's `toISOString()`, a person, an import) may have no fraction or an offset:
    `2026-01-01T00:00:00Z` reads as that second (issue 28 §3)."""
    try:
        return datetime.strptime(text, _TIME).replace(tzinfo=UTC)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CorruptData(f"a skill statistics time is not an ISO 8601 time: {text!r}") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _opt_time(text: str | None) -> datetime | None:
    return None if text is None else _time(text)


def _project(project: str | None) -> str:
    return "" if project is None else project


def _job(row: Sequence[Any]) -> CurationJob:
    job_id, project, kind, state, reason, created, updated, finished = row
    return CurationJob(
        job_id=int(job_id),
        project=str(project),
        kind=CurationKind(kind),
        state=JobState(state),
        reason=reason,
        created_at=_time(created),
        updated_at=_time(updated),
        finished_at=_opt_time(finished),
    )


def _governance(row: Sequence[Any]) -> GovernanceRecord:
    skill_id, state, domain, reason, updated, promoted_to, promoted_from, backup = row
    return GovernanceRecord(
        skill_id=str(skill_id),
        state=str(state),
        task_domain=domain,
        reason=reason,
        updated_at=_time(updated),
        promoted_to=promoted_to,
        promoted_from=promoted_from,
        backup=backup,
    )


class SqliteSkillTables:
    #: the index hint of the windowed stats query (SQLite only)
    _BY_AT: str = " INDEXED BY skill_usage_events_by_at"

    def __init__(self, storage: Any) -> None:
        self._storage = storage

    @property
    def storage(self) -> Any:
        return self._storage

    # -- plumbing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _read(self) -> Iterator[apsw.Connection]:
        with self._guard(), self._storage.read() as conn:
            yield conn

    @contextlib.contextmanager
    def _write(self) -> Iterator[apsw.Connection]:
        with self._guard(), self._storage.transaction():
            yield self._storage.connection  # inside: a reopened connection is the current one

    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        """A driver error the storage did not map itself (a closed connection) is mapped here:
        none crosses the port (style rule 31)."""
        try:
            yield
        except apsw.Error as exc:
            raise map_error(exc, self._storage.path) from exc

    # -- loads ---------------------------------------------------------------------------------

    def record_loads(self, skill_ids: Sequence[str], project: str | None, day: date) -> None:
        ids = list(dict.fromkeys(name("skill_id", s) for s in skill_ids))
        where = _project(optional_name("project", project))
        on = utc_day("day", day).isoformat()
        if not ids:
            return
        with self._write() as conn:
            conn.executemany(
                "INSERT INTO skill_load_daily (skill_id, project, day, count) VALUES (?, ?, ?, 1) "
                "ON CONFLICT (skill_id, project, day) DO UPDATE SET "
                "count = skill_load_daily.count + 1",
                [(skill_id, where, on) for skill_id in ids],
            )

    def _last_cleanup(self, conn: apsw.Connection) -> datetime | None:
        row = conn.execute("SELECT value FROM store_meta WHERE key = ?", (CLEANUP_KEY,)).fetchone()
        return None if row is None else _time(str(row[0]))

    def cleanup_loads(self, now: datetime, retention_days: int, budget: int) -> CleanupReport:
        now = aware("now", now)
        count("retention_days", retention_days)
        count("budget", budget)
        if retention_days == 0:
            return CleanupReport(ran=False, reason="disabled")
        # the common case (not due) reads only: no write lock on every discovery
        with self._read() as conn:
            last = self._last_cleanup(conn)
        if _not_due(last, now):
            return CleanupReport(ran=False, reason="not-due", last_cleanup=last)
        cutoff = now.astimezone(UTC).date() - timedelta(days=retention_days)
        limit = cutoff.isoformat()
        with self._write() as conn:
            last = self._last_cleanup(conn)  # another process may have run it meanwhile
            if _not_due(last, now):
                return CleanupReport(ran=False, reason="not-due", last_cleanup=last)
            conn.execute(
                "DELETE FROM skill_load_daily WHERE rowid IN (SELECT rowid FROM skill_load_daily "
                "WHERE day < ? ORDER BY day LIMIT ?)",
                (limit, budget),
            )
            deleted_daily = conn.changes()
            conn.execute(
                "DELETE FROM skill_load_events WHERE rowid IN (SELECT rowid FROM "
                "skill_load_events WHERE at < ? ORDER BY at LIMIT ?)",
                (limit, budget),
            )
            deleted_events = conn.changes()
            more_daily = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM skill_load_daily WHERE day < ?)", (limit,)
            ).get
            more_events = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM skill_load_events WHERE at < ?)", (limit,)
            ).get
            conn.execute(
                "INSERT INTO store_meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (CLEANUP_KEY, utc_text(now)),
            )
        return CleanupReport(
            ran=True,
            reason="ran",
            deleted_daily=deleted_daily,
            deleted_events=deleted_events,
            more_daily=bool(more_daily),
            more_events=bool(more_events),
            cutoff=cutoff,
            last_cleanup=now,
        )

    def load_counts(self, since_day: date | None, project: str | None = None) -> dict[str, int]:
        if since_day is not None:
            utc_day("since_day", since_day)
        project = optional_name("project", project)
        with self._read() as conn:
            return self._load_counts(conn, since_day, project)

    def _load_counts(
        self, conn: apsw.Connection, since: date | None, project: str | None
    ) -> dict[str, int]:
        daily, events, params_d, params_e = [], [], [], []
        if since is not None:
            daily.append("d.day >= ?")
            events.append("e.at >= ?")
            params_d.append(since.isoformat())
            params_e.append(since.isoformat())
        if project is not None:
            daily.append("d.project = ?")
            events.append("coalesce(e.project, '') = ?")
            params_d.append(project)
            params_e.append(project)
        # a history day counts only where no daily row exists for its skill and project
        events.append(
            "NOT EXISTS (SELECT 1 FROM skill_load_daily AS x WHERE x.skill_id = e.skill_id "
            "AND x.project = coalesce(e.project, '') AND x.day = substr(e.at, 1, 10))"
        )
        where_d = " AND ".join(daily) or "TRUE"
        where_e = " AND ".join(events)
        sql = (
            "SELECT skill_id, sum(n) FROM ("
            f"SELECT d.skill_id AS skill_id, d.count AS n FROM skill_load_daily AS d "
            f"WHERE {where_d} "
            "UNION ALL "
            f"SELECT e.skill_id, count(*) FROM skill_load_events AS e WHERE {where_e} "
            "GROUP BY e.skill_id"
            ") AS loads GROUP BY skill_id"
        )
        return {str(s): int(n) for s, n in conn.execute(sql, (*params_d, *params_e))}

    def stats(self, since_days: int | None, project: str | None, today: date) -> list[SkillStatRow]:
        first = since_day(since_days, today)
        project = optional_name("project", project)
        where, params = [], []
        if first is not None:
            where.append("at >= ?")
            params.append(first.isoformat())
        # without INDEXED BY the planner walks the (skill_id, at) index whole to save the
        # GROUP BY sort: every use ever recorded would be read for a one-day window
        table = "skill_usage_events" + (self._BY_AT if where else "")
        if project is not None:
            where.append("project = ?")
            params.append(project)
        sql = (
            "SELECT skill_id, count(*), count(DISTINCT session_id), count(DISTINCT project) "
            f"FROM {table} WHERE {' AND '.join(where) or 'TRUE'} GROUP BY skill_id"
        )
        with self._read() as conn:
            loads = self._load_counts(conn, first, project)
            uses = {str(row[0]): row[1:] for row in conn.execute(sql, params)}
        rows = []
        for skill_id in sorted(set(loads) | set(uses)):
            used, sessions, projects = uses.get(skill_id, (0, 0, 0))
            rows.append(
                SkillStatRow(
                    skill_id=skill_id,
                    loads=loads.get(skill_id, 0),
                    usages=int(used),
                    sessions=int(sessions),
                    projects=int(projects),
                )
            )
        return rows

    # -- usage evidence ------------------------------------------------------------------------

    def record_use(self, evidence: UsageFields) -> None:
        u = checked_usage(evidence)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO skill_usage_events (skill_id, session_id, project, task_domain, at, "
                "main_session) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    u.skill_id,
                    u.session_id,
                    u.project,
                    u.task_domain,
                    utc_text(u.at),
                    int(u.main_session),
                ),
            )

    def usages(self, skill_id: str | None = None) -> list[UsageRecord]:
        skill_id = optional_name("skill_id", skill_id)
        sql = "SELECT skill_id, session_id, project, task_domain, at, main_session "
        sql += "FROM skill_usage_events "
        params: tuple[str, ...] = ()
        if skill_id is not None:
            sql += "WHERE skill_id = ? "
            params = (skill_id,)
        with self._read() as conn:
            rows: list[Any] = conn.execute(sql + "ORDER BY at, rowid", params).fetchall()
        return [
            UsageRecord(
                skill_id=str(s),
                session_id=str(session),
                project=project,
                task_domain=domain,
                at=_time(at),
                main_session=bool(main),
            )
            for s, session, project, domain, at, main in rows
        ]

    # -- visibility ----------------------------------------------------------------------------

    def set_visibility(self, project: str, skill_id: str, state: SkillVisibility | str) -> None:
        key = (name("project", project), name("skill_id", skill_id))
        value = choice(SkillVisibility, "state", state)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO skill_visibility (project, skill_id, state) VALUES (?, ?, ?) "
                "ON CONFLICT (project, skill_id) DO UPDATE SET state = excluded.state",
                (*key, value.value),
            )

    def reset_visibility(self, project: str, skill_id: str) -> bool:
        key = (name("project", project), name("skill_id", skill_id))
        with self._write() as conn:
            conn.execute("DELETE FROM skill_visibility WHERE project = ? AND skill_id = ?", key)
            return conn.changes() > 0

    def visibility(self, project: str) -> dict[str, SkillVisibility]:
        project = name("project", project)
        with self._read() as conn:
            rows: list[Any] = conn.execute(
                "SELECT skill_id, state FROM skill_visibility WHERE project = ? ORDER BY skill_id",
                (project,),
            ).fetchall()
        return {str(s): SkillVisibility(v) for s, v in rows}

    # -- governance ----------------------------------------------------------------------------

    _GOVERNANCE = (
        "SELECT skill_id, state, task_domain, reason, updated_at, promoted_to, promoted_from, "
        "backup FROM skill_governance "
    )

    def governance(self, skill_id: str) -> GovernanceRecord | None:
        skill_id = name("skill_id", skill_id)
        with self._read() as conn:
            row = conn.execute(self._GOVERNANCE + "WHERE skill_id = ?", (skill_id,)).fetchone()
        return None if row is None else _governance(row)

    def governance_records(self) -> list[GovernanceRecord]:
        with self._read() as conn:
            rows = conn.execute(self._GOVERNANCE + "ORDER BY skill_id").fetchall()
        return [_governance(row) for row in rows]

    def set_governance(self, record: GovernanceRecord) -> None:
        r = checked_governance(record)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO skill_governance (skill_id, state, task_domain, reason, "
                "updated_at, promoted_to, promoted_from, backup) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (skill_id) DO UPDATE SET state = excluded.state, "
                "task_domain = excluded.task_domain, reason = excluded.reason, "
                "updated_at = excluded.updated_at, promoted_to = excluded.promoted_to, "
                "promoted_from = excluded.promoted_from, backup = excluded.backup",
                (
                    r.skill_id,
                    r.state,
                    r.task_domain,
                    r.reason,
                    utc_text(r.updated_at),
                    r.promoted_to,
                    r.promoted_from,
                    r.backup,
                ),
            )

    def clear_governance(self, skill_id: str) -> bool:
        skill_id = name("skill_id", skill_id)
        with self._write() as conn:
            conn.execute("DELETE FROM skill_governance WHERE skill_id = ?", (skill_id,))
            return conn.changes() > 0

    def policy_overrides(self, project: str) -> PolicyOverrides | None:
        project = name("project", project)
        with self._read() as conn:
            row = conn.execute(
                "SELECT data, updated_at FROM skill_policy_overrides WHERE project = ?", (project,)
            ).fetchone()
        if row is None:
            return None
        return PolicyOverrides(project=project, data=str(row[0]), updated_at=_time(str(row[1])))

    def set_policy_overrides(self, record: PolicyOverrides) -> None:
        r = checked_overrides(record)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO skill_policy_overrides (project, data, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT (project) DO UPDATE SET data = excluded.data, "
                "updated_at = excluded.updated_at",
                (r.project, r.data, utc_text(r.updated_at)),
            )

    # -- curation jobs -------------------------------------------------------------------------

    def begin_curation(
        self,
        project: str,
        kind: CurationKind | str,
        now: datetime,
        limits: CurationLimits,
        *,
        queued: bool = False,
    ) -> JobLease | CurationRefusal:
        project = name("project", project)
        job_kind = choice(CurationKind, "kind", kind)
        now = aware("now", now).astimezone(UTC)
        limits = checked_limits(limits)
        stamp = utc_text(now)
        with self._write() as conn:
            active = [
                _job(row)
                for row in conn.execute(
                    f"SELECT {_JOB_COLUMNS} FROM skill_curation_jobs "
                    f"WHERE project = ? AND state IN {_ACTIVE}",
                    (project,),
                )
            ]
            stale = [job for job in active if is_stale(job, now, limits)]
            conn.executemany(
                "UPDATE skill_curation_jobs SET state = ?, reason = ?, finished_at = updated_at "
                "WHERE id = ?",
                [(JobState.TIMED_OUT.value, STALE_REASON, job.job_id) for job in stale],
            )
            facts = self._facts(conn, project)
            refused = refusal(job_kind, now, limits, facts)
            if refused is not None:
                reason, until = refused
                conn.execute(
                    "INSERT INTO skill_curation_skips (project, reason, count, last_at) "
                    "VALUES (?, ?, 1, ?) ON CONFLICT (project, reason) DO UPDATE SET "
                    "count = skill_curation_skips.count + 1, last_at = excluded.last_at",
                    (project, reason.value, stamp),
                )
                return CurationRefusal(
                    project=project,
                    kind=job_kind,
                    reason=reason,
                    until=until,
                    cleared_stale=len(stale),
                )
            state = JobState.QUEUED if queued else JobState.RUNNING
            job_id = int(
                conn.execute(
                    "INSERT INTO skill_curation_jobs (project, kind, state, created_at, "
                    "updated_at) VALUES (?, ?, ?, ?, ?) RETURNING id",
                    (project, job_kind.value, state.value, stamp, stamp),
                ).get
            )
        return JobLease(
            job_id=job_id,
            project=project,
            kind=job_kind,
            state=state,
            started_at=now,
            cleared_stale=len(stale),
        )

    def _facts(self, conn: apsw.Connection, project: str) -> LeaseFacts:
        busy = conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM skill_curation_jobs WHERE project = ? "
            f"AND state IN {_ACTIVE})",
            (project,),
        ).get
        found: Any = conn.execute(
            "SELECT max(id), max(finished_at) FROM skill_curation_jobs "
            "WHERE project = ? AND state = 'succeeded'",
            (project,),
        ).fetchone()
        success_id, success_at = found
        auto_success_at = conn.execute(
            "SELECT max(finished_at) FROM skill_curation_jobs "
            "WHERE project = ? AND state = 'succeeded' AND kind = 'auto'",
            (project,),
        ).get
        attempt_at = conn.execute(
            "SELECT max(finished_at) FROM skill_curation_jobs WHERE project = ? "
            "AND finished_at IS NOT NULL",
            (project,),
        ).get
        failures = conn.execute(
            "SELECT count(*) FROM skill_curation_jobs WHERE project = ? "
            "AND state IN ('failed', 'timed-out') AND id > ?",
            (project, success_id or 0),
        ).get
        return LeaseFacts(
            busy=bool(busy),
            last_success_at=_opt_time(success_at),
            last_auto_success_at=_opt_time(auto_success_at),
            last_attempt_at=_opt_time(attempt_at),
            consecutive_failures=int(failures),
        )

    def start_curation(self, job_id: int, now: datetime) -> bool:
        count("job_id", job_id)
        stamp = utc_text(aware("now", now))
        with self._write() as conn:
            conn.execute(
                "UPDATE skill_curation_jobs SET state = 'running', updated_at = ? "
                "WHERE id = ? AND state = 'queued'",
                (stamp, job_id),
            )
            return conn.changes() > 0

    def finish_curation(
        self, job_id: int, state: JobState | str, reason_code: str | None, now: datetime
    ) -> bool:
        count("job_id", job_id)
        final = finished_state(state)
        reason_code = optional_name("reason_code", reason_code)
        stamp = utc_text(aware("now", now))
        with self._write() as conn:
            conn.execute(
                "UPDATE skill_curation_jobs SET state = ?, reason = ?, updated_at = ?, "
                f"finished_at = ? WHERE id = ? AND state IN {_ACTIVE}",
                (final.value, reason_code, stamp, stamp, job_id),
            )
            return conn.changes() > 0

    def curation_status(self, project: str) -> CurationStatus:
        project = name("project", project)
        with self._read() as conn:
            active = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM skill_curation_jobs WHERE project = ? "
                f"AND state IN {_ACTIVE} ORDER BY id DESC LIMIT 1",
                (project,),
            ).fetchone()
            last = conn.execute(
                f"SELECT {_JOB_COLUMNS} FROM skill_curation_jobs WHERE project = ? "
                f"AND state NOT IN {_ACTIVE} ORDER BY id DESC LIMIT 1",
                (project,),
            ).fetchone()
            skips: list[Any] = conn.execute(
                "SELECT reason, count FROM skill_curation_skips WHERE project = ? ORDER BY reason",
                (project,),
            ).fetchall()
            facts = self._facts(conn, project)
        return CurationStatus(
            project=project,
            active=None if active is None else _job(active),
            last=None if last is None else _job(last),
            skips={str(r): int(n) for r, n in skips},
            consecutive_failures=facts.consecutive_failures,
            last_success_at=facts.last_success_at,
        )


def _not_due(last: datetime | None, now: datetime) -> bool:
    """Due when it never ran, 24 h have passed, or the stored time is in the future (a clock
    set back must not block the cleanup until it catches up)."""
    return last is not None and timedelta(0) <= now - last < CLEANUP_INTERVAL
