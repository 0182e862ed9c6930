"""The doctor's report: what the store looks like, read without changing anything (ADR 0036).

`pi_hermes_memory.doctor_open.diagnose` gathers the facts read-only and builds a `DoctorReport`
here; `Memory.doctor()` and `pi-hermes-memory doctor` are its front doors. The report is data
(attrs values): `healthy`/`problems` decide the exit code, `to_json()` and `render()` show it.
Secrets are never part of it: the embedding section names the environment variable, never
its value, and no base URL.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
from pi_hermes_memory.doctor.cross_scope import GLOBAL_SCOPE, ScopePair
from pi_hermes_memory.errors import DoctorFailed

__all__ = [
    "SHOWN_PAIRS",
    "DoctorFailed",
    "DoctorReport",
    "EmbeddingState",
    "HostState",
    "HostsState",
    "ModelCoverage",
    "NearDuplicate",
    "NearDuplicates",
    "PathsState",
    "SessionState",
    "SkillsState",
    "TargetState",
    "brute_force_pairs",
    "near_duplicates_section",
]

#: the report renders this many near-duplicate candidates (the counts stay exact)
SHOWN_PAIRS = 50
_EXCERPT = 80


@attrs.frozen(kw_only=True)
class EmbeddingState:
    provider: str  # the effective provider ("off" unless usable)
    requested: str  # what the configuration asks for
    model: str | None  # the vector identity rows are checked against; None when unknown
    api_key_env: str | None  # the variable's NAME, never its value
    off_reason: str | None  # EmbeddingDisabledReason value, None when on


@attrs.frozen(kw_only=True)
class PathsState:
    agent_root: str
    config_file: str
    config_file_exists: bool
    memory_dir: str
    projects_memory_dir: str
    database: str
    project: str | None
    #: memoryDir and projectsMemoryDir resolve to one physical folder (or two documents are
    #: one file): the reason, else None
    same_root: str | None
    warnings: tuple[str, ...]
    embedding: EmbeddingState


@attrs.frozen(kw_only=True)
class TargetState:
    """One document: active entries in the Markdown view, the mirror's rows, and the
    differences between the journal and the mirror (what sync-markdown repairs)."""

    target: str
    markdown_active: int
    sqlite_active: int
    superseded: int
    missing: int = 0  # journal rows the mirror lacks
    extra: int = 0  # active mirror rows the journal lacks
    different: int = 0
    #: events the next open (or sync-markdown) imports from a hand edit of the file
    pending_hand_edit_events: int = 0

    @property
    def consistent(self) -> bool:
        return not (self.missing or self.extra or self.different)


@attrs.frozen(kw_only=True)
class ModelCoverage:
    model: str
    rows: int
    current: bool


@attrs.frozen(kw_only=True)
class SessionState:
    root: str
    files: int  # session files on disk
    indexed: int  # files the index knows
    stale: int  # on disk, not indexed up to their current size (new, grown or rewritten)
    gone: int  # indexed, no longer on disk
    database_bytes: int


@attrs.frozen(kw_only=True)
class SkillsState:
    skills: int
    unreadable: tuple[str, ...]  # "<path>: <why>"
    shadowed: tuple[str, ...]  # global skill ids shadowed by (or shadowing) a host skill
    hidden: dict[str, tuple[str, ...]]  # project -> hidden skill ids


@attrs.frozen(kw_only=True)
class NearDuplicate:
    left_scope: str
    left_id: str
    left_excerpt: str
    right_scope: str
    right_id: str
    right_excerpt: str
    basis: str  # cosine | token
    score: float
    kind: str  # "promotion candidate" | "suspected duplicate"

    @property
    def suggestion(self) -> str:
        if self.kind == "suspected duplicate":
            return (
                "suspected duplicate: merge into the global entry with memory promote, or "
                "demote a global entry that belongs to one project only"
            )
        return (
            "promotion candidate: if the entry proved true across projects, promote it "
            "(switch to the project that owns it first)"
        )


@attrs.frozen(kw_only=True)
class NearDuplicates:
    """Every cross-scope pair above the thresholds (no pair budget): `total` is exact."""

    rows: int
    rows_with_vector: int
    scopes: int
    #: cross-scope pairs a brute-force scan compares (the seed stops at 250,000)
    brute_force_pairs: int
    total: int
    promotion_candidates: int
    suspected_duplicates: int
    shown: tuple[NearDuplicate, ...]
    seconds: float

    @property
    def truncated(self) -> bool:
        return self.total > len(self.shown)


@attrs.frozen(kw_only=True)
class HostState:
    """One host program `setup` wired in (issue 30, ADR 0092)."""

    host: str
    where: str | None  # the file that holds our entry (or the host's folder)
    detail: str
    problems: tuple[str, ...]  # what keeps the wiring from working (its command is gone, ...)
    #: when the host last called us (a hook or the extension), ISO 8601; None: never recorded
    last_call: str | None = None


@attrs.frozen(kw_only=True)
class HostsState:
    """The hosts section: every host that is set up, and the store's last background review
    (the hosts share it)."""

    hosts: tuple[HostState, ...]
    #: hosts found installed but not set up
    not_set_up: tuple[str, ...] = ()
    last_review: str | None = None  # ISO 8601 of the last review summary; None: never
    last_review_result: str | None = None


@attrs.frozen(kw_only=True)
class DoctorReport:
    paths: PathsState
    targets: tuple[TargetState, ...]
    unattributed: int
    coverage_rows: int  # active rows (every target) the coverage counts refer to
    coverage: tuple[ModelCoverage, ...]
    sessions: SessionState
    skills: SkillsState
    near_duplicates: NearDuplicates
    problems: tuple[str, ...]
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    #: the hosts section (`pi-hermes-memory doctor`); None where it was not checked
    hosts: HostsState | None = None

    @property
    def healthy(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        data = attrs.asdict(self, recurse=True)
        data["healthy"] = self.healthy
        data["near_duplicates"]["truncated"] = self.near_duplicates.truncated
        for shown, pair in zip(
            data["near_duplicates"]["shown"], self.near_duplicates.shown, strict=True
        ):
            shown["suggestion"] = pair.suggestion
        data["targets"] = [{**attrs.asdict(t), "consistent": t.consistent} for t in self.targets]
        return data

    def render(self) -> str:
        return "\n".join(_lines(self))


def brute_force_pairs(scope_sizes: Sequence[int]) -> int:
    """How many cross-scope pairs comparing every pair would look at."""
    n = sum(scope_sizes)
    return n * (n - 1) // 2 - sum(k * (k - 1) // 2 for k in scope_sizes)


def _excerpt(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 1] + "…"


def near_duplicates_section(
    pairs: Sequence[ScopePair],
    *,
    rows: int,
    rows_with_vector: int,
    scope_sizes: Sequence[int],
    seconds: float,
    shown: int = SHOWN_PAIRS,
) -> NearDuplicates:
    listed = tuple(
        NearDuplicate(
            left_scope=p.left.scope,
            left_id=p.left.entry_id,
            left_excerpt=_excerpt(p.left.text),
            right_scope=p.right.scope,
            right_id=p.right.entry_id,
            right_excerpt=_excerpt(p.right.text),
            basis=p.basis,
            score=round(p.score, 4),
            kind=p.kind,
        )
        for p in _global_last(pairs[:shown])
    )
    promotions = sum(1 for p in pairs if p.kind == "promotion candidate")
    return NearDuplicates(
        rows=rows,
        rows_with_vector=rows_with_vector,
        scopes=len(scope_sizes),
        brute_force_pairs=brute_force_pairs(scope_sizes),
        total=len(pairs),
        promotion_candidates=promotions,
        suspected_duplicates=len(pairs) - promotions,
        shown=listed,
        seconds=seconds,
    )


def _global_last(pairs: Sequence[ScopePair]) -> list[ScopePair]:
    """Each pair with the project side first (`project:web x global`, as the seed shows)."""
    out = []
    for p in pairs:
        if p.left.scope == GLOBAL_SCOPE:
            p = attrs.evolve(p, left=p.right, right=p.left)
        out.append(p)
    return out


def _lines(report: DoctorReport) -> list[str]:
    p = report.paths
    e = p.embedding
    out = [
        "pi-hermes-memory doctor (read-only: nothing was changed)",
        "",
        "Paths and config",
        f"  agent root: {p.agent_root}",
        f"  config file: {p.config_file}{'' if p.config_file_exists else ' (absent: defaults)'}",
        f"  memoryDir: {p.memory_dir}",
        f"  projectsMemoryDir: {p.projects_memory_dir}",
        f"  database: {p.database}",
        f"  project: {p.project or '(none)'}",
        f"  same physical root: {p.same_root or 'no'}",
    ]
    out.extend(f"  warning: {w}" for w in p.warnings)
    key = f", apiKeyEnv {e.api_key_env}" if e.api_key_env else ""
    why = f" ({e.off_reason})" if e.off_reason else ""
    out.append(f"  embedding: {e.provider}{why}; requested {e.requested}{key}")
    if e.model:
        out.append(f"  vector model: {e.model}")
    out += ["", "Markdown <-> SQLite (active rows; superseded beside)"]
    for t in report.targets:
        state = (
            "ok"
            if t.consistent
            else (f"missing {t.missing}, extra {t.extra}, different {t.different}")
        )
        edit = (
            f"; pending hand edit: {t.pending_hand_edit_events} event(s)"
            if t.pending_hand_edit_events
            else ""
        )
        out.append(
            f"  {t.target}: markdown {t.markdown_active}, sqlite {t.sqlite_active}, "
            f"superseded {t.superseded}: {state}{edit}"
        )
    out.append(f"  unattributed project entries: {report.unattributed}")
    out += ["", f"Embedding coverage ({report.coverage_rows} active rows)"]
    if not report.coverage:
        out.append("  no stored vectors")
    for c in report.coverage:
        out.append(f"  {c.model}: {c.rows}{' (current model)' if c.current else ''}")
    s = report.sessions
    out += [
        "",
        "Session index",
        f"  files: {s.files} under {s.root}; indexed {s.indexed}, stale {s.stale}, gone {s.gone}",
        f"  database size: {s.database_bytes} bytes",
        "",
        f"Skills ({report.skills.skills})",
    ]
    out.extend(f"  unreadable: {u}" for u in report.skills.unreadable)
    out.extend(f"  shadowed: {u}" for u in report.skills.shadowed)
    for project, hidden in report.skills.hidden.items():
        out.append(f"  hidden in {project}: {', '.join(hidden)}")
    n = report.near_duplicates
    out += [
        "",
        "Cross-scope near-duplicate candidates (read-only)",
        f"  scanned {n.rows} rows in {n.scopes} scopes ({n.rows_with_vector} with a current "
        f"vector), every pair: {n.brute_force_pairs} cross-scope pairs, in {n.seconds:.2f} s",
    ]
    if n.total == 0:
        out.append("  no cross-scope near-duplicates")
    else:
        out.append(
            f"  Total candidates: {n.total} ({n.promotion_candidates} promotion candidates, "
            f"{n.suspected_duplicates} suspected duplicates)"
        )
        for i, d in enumerate(n.shown, 1):
            out.append(
                f"  {i}. {d.left_scope} x {d.right_scope} [{d.basis}={d.score:.3f}] "
                f"{d.left_id} / {d.right_id}"
            )
            out.append(f"     {d.left_excerpt!r} / {d.right_excerpt!r}")
            out.append(f"     suggestion: {d.suggestion}")
        if n.truncated:
            out.append(f"  output truncated: showing the first {len(n.shown)} of {n.total}")
    out.extend(_host_lines(report.hosts))
    out += ["", "Problems" if report.problems else "No problems found"]
    out.extend(f"  - {problem}" for problem in report.problems)
    if report.notes:
        out += ["", "Notes"]
        out.extend(f"  - {note}" for note in report.notes)
    return out


def _host_lines(hosts: HostsState | None) -> list[str]:
    if hosts is None:
        return []
    out = ["", f"Hosts ({len(hosts.hosts)} set up)"]
    if not hosts.hosts:
        out.append("  no host is set up: `pi-hermes-memory setup` lists them")
    for h in hosts.hosts:
        state = "ok" if not h.problems else "NOT WORKING (see Problems)"
        out.append(f"  {h.host}: {h.where or '?'}: {state}")
        out.append(f"    last call: {h.last_call or 'never recorded'}")
    if hosts.not_set_up:
        out.append(f"  installed, not set up: {', '.join(hosts.not_set_up)}")
    result = f" ({hosts.last_review_result})" if hosts.last_review_result else ""
    out.append(f"  last review: {hosts.last_review or 'never'}{result}")
    return out
