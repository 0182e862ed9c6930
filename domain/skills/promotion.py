"""Promotion of project skills to global skills, and the rule-based curation classifier.

Promotion (`PromotionPolicy.evaluate`). A project skill becomes a promotion candidate when
every criterion holds; each is reported with its numbers (`PromotionVerdict.explain_lines`):

- ``promotion-enabled``: ``skillGovernance.promotionEnabled``;
- ``project-skill``: the skill exists and is a project skill;
- ``same-domain-uses``, ``sessions``, ``projects``: in ONE task domain, the main-session
  ``skill.use`` evidence reaches ``promotionMinSameDomainUsages`` uses (3), in
  ``promotionMinSessions`` distinct sessions (2) and ``promotionMinProjects`` distinct projects
  (1). Uses recorded by child sessions never count. The task domain of a use is the one it
  recorded, else the one inferred from the skill's text (`infer_task_domain`); a use with
  neither counts for no domain (the explanation says how many there were);
- ``global-safe``: when ``promotionRequireGlobalSafe`` is on, `classify_skill` finds the skill
  global-safe (rules below);
- ``conflict``: no global skill has the slug, or ``promotionConflictStrategy`` is
  ``overwrite`` (the verdict then says `overwrite`).

Global-safe rules (`classify_skill`). A skill is ``project-only`` when its name, description,
body or support files hold any of:

- G1 ``project-name``: a known project name (the skill's own project included), matched
  case-insensitively as a whole word (no ASCII letter, digit or ``_`` touching it; inside CJK
  text any occurrence counts). A name that is also a configured transferable domain term
  (``promotionDomainTerms``) is not counted: the term says it is a general word;
- G2 ``absolute-path``: a user- or machine-specific absolute path: ``/home/<user>``,
  ``/Users/<user>``, ``/root/``, a drive path (``C:\\``, ``C:/``), a UNC path (``\\\\host\\``),
  ``~/``, ``$HOME/`` or ``%USERPROFILE%``;
- G3 ``repository-path``: a repository-relative path: ``./x``, ``../x``, or one starting with a
  source folder (``src/``, ``lib/``, ``app/``, ``apps/``, ``packages/``, ``internal/``,
  ``cmd/``, ``pkg/``, ``scripts/``, ``config/``), except the skill's own support files
  (``scripts/check.sh`` of the skill travels with it);
- G4 ``project-command``: a command that runs the project's own targets: ``npm|pnpm|yarn|bun
  run <script>`` anywhere, ``make <target>`` and ``just <recipe>`` in code (fenced blocks,
  inline code, ``$ `` lines: "make sure" in prose is not a command). The autotools targets
  ``make install|check|clean|all|distclean`` are conventions, not project targets;
- G5 ``private-network``: a private or link-local IPv4 address (10/8, 172.16/12, 192.168/16,
  169.254/16) or a host under ``.local``, ``.internal``, ``.lan``, ``.corp``, ``.intranet``,
  ``.home.arpa``. Loopback (``localhost``, ``127.0.0.1``) is allowed: it means "this machine"
  everywhere.

Pure and deterministic: the same skill, evidence and policy give the same verdict.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Iterable, Sequence
from datetime import datetime

import attrs
from pi_hermes_memory.domain.echo import shown
from pi_hermes_memory.domain.skills.events import SkillScope
from pi_hermes_memory.domain.skills.skill import SkillState


@attrs.frozen(kw_only=True)
class TaskDomain:
    """A task domain: a lower-case slug id and the terms that mark a skill as part of it."""

    id: str
    description: str = ""
    terms: tuple[str, ...]


_DOMAIN_ID = re.compile(r"[a-z][a-z0-9-]{0,63}")


def task_domain_problem(domain_id: str, terms: Sequence[str]) -> str | None:
    """Why (`domain_id`, `terms`) cannot configure a task domain, or None."""
    if not _DOMAIN_ID.fullmatch(domain_id):
        return f"task domain id {shown(domain_id)} must be a slug starting with a-z"
    if not terms or not all(t.strip() for t in terms):
        return f"task domain {domain_id!r} needs at least one non-empty term"
    return None


DEFAULT_TASK_DOMAINS: tuple[TaskDomain, ...] = (
    TaskDomain(
        id="repo-workflow",
        description="version control and collaboration",
        terms=("git", "branch", "commit", "merge", "rebase", "pull request", "cherry-pick",
               "changelog", "code review", "worktree", "tag"),
    ),
    TaskDomain(
        id="debugging",
        description="finding and fixing faults",
        terms=("debug", "debugging", "bug", "stack trace", "traceback", "crash", "breakpoint",
               "bisect", "reproduce", "root cause", "profiling", "memory leak"),
    ),
    TaskDomain(
        id="testing",
        description="writing and running tests",
        terms=("test", "testing", "pytest", "unit test", "coverage", "fixture", "mock",
               "assertion", "jest", "tdd", "property-based", "hypothesis", "flaky"),
    ),
    TaskDomain(
        id="deployment",
        description="building, releasing and running software",
        terms=("deploy", "deployment", "release", "docker", "container", "kubernetes",
               "helm", "pipeline", "rollout", "rollback", "terraform", "ci", "publish"),
    ),
    TaskDomain(
        id="documentation",
        description="writing docs",
        terms=("documentation", "docs", "readme", "docstring", "adr", "guide", "tutorial",
               "changelog entry", "api reference"),
    ),
    TaskDomain(
        id="data",
        description="databases and data processing",
        terms=("sql", "database", "query", "migration", "schema", "csv", "etl", "pandas",
               "dataframe", "dataset", "sqlite", "postgres", "index"),
    ),
)  # fmt: skip


class ConflictStrategy(enum.StrEnum):
    BLOCK = "block"
    OVERWRITE = "overwrite"


class ScopeVerdict(enum.StrEnum):
    GLOBAL_SAFE = "global-safe"
    PROJECT_ONLY = "project-only"


@attrs.frozen(kw_only=True)
class UsageEvidence:
    """One recorded ``skill.use``."""

    skill_id: str
    session_id: str
    project: str | None
    task_domain: str | None
    at: datetime
    main_session: bool


@attrs.frozen(kw_only=True)
class Classification:
    skill_id: str
    task_domain: str | None
    scope_verdict: ScopeVerdict
    reasons: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Criterion:
    name: str
    required: int | bool | str
    actual: int | bool | str
    passed: bool
    detail: str

    def line(self) -> str:
        if isinstance(self.required, bool):
            needs = "required" if self.required else "not required"
        elif isinstance(self.required, int):
            needs = f"needs >= {self.required}"
        else:
            needs = f"needs {self.required}"
        mark = "ok" if self.passed else "NO"
        actual = ("yes" if self.actual else "no") if isinstance(self.actual, bool) else self.actual
        tail = f" - {self.detail}" if self.detail else ""
        return f"[{mark}] {self.name}: {actual} ({needs}){tail}"


@attrs.frozen(kw_only=True)
class PromotionVerdict:
    skill_id: str
    candidate: bool
    #: the task domain whose evidence was judged (the best one), None when there was none
    task_domain: str | None
    criteria: tuple[Criterion, ...]
    #: names of the criteria that failed (e.g. 'conflict')
    reasons: tuple[str, ...]
    #: promoting replaces the global skill of the same slug (conflict strategy overwrite)
    overwrite: bool
    classification: Classification

    def explain_lines(self) -> tuple[str, ...]:
        head = "promotion candidate" if self.candidate else "not a promotion candidate"
        domain = f" (task domain {self.task_domain})" if self.task_domain else ""
        return (f"{self.skill_id}: {head}{domain}", *(c.line() for c in self.criteria))


@attrs.frozen(kw_only=True)
class PromotionPolicy:
    min_same_domain_usages: int = 3
    min_sessions: int = 2
    min_projects: int = 1
    task_domains: tuple[TaskDomain, ...] = ()
    #: transferable domain terms: words that are general even when a project bears the name
    domain_terms: tuple[str, ...] = ()
    require_global_safe: bool = True
    conflict_strategy: ConflictStrategy = ConflictStrategy.BLOCK
    enabled: bool = True

    @property
    def domains(self) -> tuple[TaskDomain, ...]:
        """The configured task domains, or the built-in ones when none are configured."""
        return self.task_domains or DEFAULT_TASK_DOMAINS

    def evaluate(
        self,
        skill: SkillState,
        usages: Sequence[UsageEvidence],
        global_slugs: frozenset[str],
        project_names: frozenset[str],
    ) -> PromotionVerdict:
        """Whether `skill` is a promotion candidate, criterion by criterion."""
        classification = classify_skill(skill, self, project_names=project_names)
        mine = [u for u in usages if u.skill_id == skill.skill_id]
        main = [u for u in mine if u.main_session]
        groups: dict[str, list[UsageEvidence]] = {}
        unclassified = 0
        for use in main:
            domain = use.task_domain or classification.task_domain
            if domain is None:
                unclassified += 1
            else:
                groups.setdefault(domain, []).append(use)
        best, uses, sessions, projects = self._best(groups)
        ignored = []
        if len(mine) > len(main):
            ignored.append(f"{len(mine) - len(main)} child-session use(s) ignored")
        if unclassified:
            ignored.append(f"{unclassified} main-session use(s) without a task domain")
        where = f"in task domain {best}" if best else "in no task domain"
        conflict = skill.slug in global_slugs
        overwrite = conflict and self.conflict_strategy is ConflictStrategy.OVERWRITE
        safe = classification.scope_verdict is ScopeVerdict.GLOBAL_SAFE
        criteria = (
            Criterion(
                name="promotion-enabled",
                required=True,
                actual=self.enabled,
                passed=self.enabled,
                detail="skillGovernance.promotionEnabled",
            ),
            Criterion(
                name="project-skill",
                required=SkillScope.PROJECT.value,
                actual=skill.scope.value if skill.exists else "missing",
                passed=skill.exists and skill.scope is SkillScope.PROJECT,
                detail="only existing project skills are promoted",
            ),
            Criterion(
                name="same-domain-uses",
                required=self.min_same_domain_usages,
                actual=uses,
                passed=uses >= self.min_same_domain_usages,
                detail="; ".join([f"main-session skill.use {where}", *ignored]),
            ),
            Criterion(
                name="sessions",
                required=self.min_sessions,
                actual=sessions,
                passed=sessions >= self.min_sessions,
                detail=f"distinct main sessions {where}",
            ),
            Criterion(
                name="projects",
                required=self.min_projects,
                actual=projects,
                passed=projects >= self.min_projects,
                detail=f"distinct projects {where}",
            ),
            Criterion(
                name="global-safe",
                required=self.require_global_safe,
                actual=classification.scope_verdict.value,
                passed=safe or not self.require_global_safe,
                detail="; ".join(classification.reasons),
            ),
            Criterion(
                name="conflict",
                required=self.conflict_strategy.value,
                actual="global skill exists" if conflict else "none",
                passed=not conflict or overwrite,
                detail=(
                    f"global:{skill.slug} would be overwritten"
                    if overwrite
                    else f"global:{skill.slug} exists"
                    if conflict
                    else f"no global skill named {skill.slug}"
                ),
            ),
        )
        failed = tuple(c.name for c in criteria if not c.passed)
        return PromotionVerdict(
            skill_id=skill.skill_id,
            candidate=not failed,
            task_domain=best,
            criteria=criteria,
            reasons=failed,
            overwrite=overwrite and not failed,
            classification=classification,
        )

    def _best(self, groups: dict[str, list[UsageEvidence]]) -> tuple[str | None, int, int, int]:
        """(domain, uses, sessions, projects) of the domain closest to the thresholds."""
        best: tuple[tuple[int, int, int, int], str, int, int, int] | None = None
        for domain in sorted(groups):
            group = groups[domain]
            uses = len(group)
            sessions = len({u.session_id for u in group})
            projects = len({u.project for u in group if u.project is not None})
            met = (
                (uses >= self.min_same_domain_usages)
                + (sessions >= self.min_sessions)
                + (projects >= self.min_projects)
            )
            key = (met, uses, sessions, projects)
            if best is None or key > best[0]:
                best = (key, domain, uses, sessions, projects)
        if best is None:
            return None, 0, 0, 0
        return best[1], best[2], best[3], best[4]


# -- task domains ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _terms_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    words = sorted({t.strip().casefold() for t in terms if t.strip()}, key=len, reverse=True)
    if not words:
        return None
    body = "|".join(r"\s+".join(re.escape(p) for p in w.split()) for w in words)
    return re.compile(rf"(?<![a-z0-9_])({body})(?:s|es|ed|ing)?(?![a-z0-9_])")


def _matched_terms(text: str, terms: tuple[str, ...]) -> set[str]:
    pattern = _terms_pattern(terms)
    if pattern is None:
        return set()
    return {" ".join(m.group(1).split()) for m in pattern.finditer(text)}


def _head(skill: SkillState) -> str:
    return " ".join(
        [skill.slug.replace("-", " "), skill.display_name or "", skill.description]
    ).casefold()


def infer_task_domain(skill: SkillState, domains: Sequence[TaskDomain]) -> str | None:
    """The domain whose terms the skill mentions most (name and description count twice,
    the body once); ties go to the domain listed first; None when no term occurs."""
    head, body = _head(skill), skill.body.casefold()
    best: tuple[int, str] | None = None
    for domain in domains:
        score = 2 * len(_matched_terms(head, domain.terms)) + len(
            _matched_terms(body, domain.terms)
        )
        if score and (best is None or score > best[0]):
            best = (score, domain.id)
    return best[1] if best else None


# -- global-safe rules ---------------------------------------------------------------------

_ABSOLUTE = re.compile(
    r"(?<![\w.~/-])(?:/home/[^\s/`'\"]+|/Users/[^\s/`'\"]+|/root(?:/|\b))"
    r"|(?<![\w])[A-Za-z]:[\\/]"
    r"|(?<![\w\\])\\\\[\w.-]+\\"
    r"|(?<![\w/~])~/"
    r"|\$HOME/|\$\{HOME\}/|%USERPROFILE%"
)
_REPO_PATH = re.compile(
    r"(?<![\w./~-])(?:\.\.?/[\w.-][\w./-]*"
    r"|(?:src|lib|app|apps|packages|internal|cmd|pkg|scripts|config)/[\w.-][\w./-]*)"
)
_RUN_SCRIPT = re.compile(r"\b(?:npm|pnpm|yarn|bun)\s+run\s+[\w:.-]+")
_CODE_COMMAND = re.compile(r"(?<![\w-])(make|just)\s+([A-Za-z0-9_][\w.:-]*)")
_CONVENTIONAL_MAKE = frozenset({"install", "check", "clean", "all", "distclean"})
_PRIVATE_NET = re.compile(
    r"(?<![\d.])(?:10\.\d{1,3}\.\d{1,3}|172\.(?:1[6-9]|2\d|3[01])\.\d{1,3}|192\.168\.\d{1,3}"
    r"|169\.254\.\d{1,3})\.\d{1,3}(?![\d.]\d)"
    r"|(?<![\w.-])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:local|internal|lan|corp|intranet"
    r"|home\.arpa)(?![\w-]|\.[\w-])",
    re.IGNORECASE,
)
#: possessive quantifiers: a line of 200,000 backticks must not backtrack quadratically
_FENCED = re.compile(r"^ {0,3}(`{3,}+|~{3,}+)[^\n]*+\n(.*?)(?:^ {0,3}\1[ \t]*$|\Z)", re.M | re.S)
_INLINE = re.compile(r"`([^`\n]+)`")
_PROMPT = re.compile(r"^[ \t]*\$ (.*)$", re.M)


def _code_of(text: str) -> str:
    """The code in Markdown text: fenced blocks, inline code spans and ``$ `` lines."""
    parts = [m.group(2) for m in _FENCED.finditer(text)]
    parts += [m.group(1) for m in _INLINE.finditer(text)]
    parts += [m.group(1) for m in _PROMPT.finditer(text)]
    return "\n".join(parts)


def _examples(found: Iterable[str], limit: int = 3) -> str:
    unique = list(dict.fromkeys(found))
    more = f" and {len(unique) - limit} more" if len(unique) > limit else ""
    return ", ".join(shown(x, 60) for x in unique[:limit]) + more


def _project_pattern(names: frozenset[str], general: frozenset[str]) -> re.Pattern[str] | None:
    kept = sorted((n for n in names if n.strip() and n.casefold() not in general), key=len)
    if not kept:
        return None
    alternatives = "|".join(re.escape(n) for n in reversed(kept))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{alternatives})(?![A-Za-z0-9_])", re.IGNORECASE)


def classify_skill(
    skill: SkillState,
    policy: PromotionPolicy,
    *,
    project_names: frozenset[str] = frozenset(),
) -> Classification:
    """The task domain and the scope verdict of a skill by the rules in the module docstring."""
    texts = [skill.slug, skill.display_name or "", skill.description, skill.body]
    texts += [content for _, content in skill.files]
    text = "\n".join(texts)
    code = _code_of("\n".join([skill.body, *(c for _, c in skill.files)]))
    own_files = {path for path, _ in skill.files}
    general = frozenset(t.strip().casefold() for t in policy.domain_terms if t.strip())
    names = project_names | ({skill.project} if skill.project else frozenset())
    found: list[tuple[str, list[str]]] = []
    pattern = _project_pattern(names, general)
    if pattern is not None:
        found.append(("project-name", [m.group(0) for m in pattern.finditer(text)]))
    found.append(("absolute-path", [m.group(0) for m in _ABSOLUTE.finditer(text)]))
    paths = [m.group(0).rstrip(".") for m in _REPO_PATH.finditer(text)]
    found.append(("repository-path", [p for p in paths if p.removeprefix("./") not in own_files]))
    commands = [m.group(0) for m in _RUN_SCRIPT.finditer(text)]
    commands += [
        m.group(0)
        for m in _CODE_COMMAND.finditer(code)
        if not (m.group(1) == "make" and m.group(2) in _CONVENTIONAL_MAKE)
    ]
    found.append(("project-command", commands))
    found.append(("private-network", [m.group(0) for m in _PRIVATE_NET.finditer(text)]))
    reasons = tuple(f"{rule}: {_examples(hits)}" for rule, hits in found if hits)
    if reasons:
        verdict = ScopeVerdict.PROJECT_ONLY
    else:
        verdict = ScopeVerdict.GLOBAL_SAFE
        reasons = (
            "no project name, absolute path, repository path, project command or private "
            "host found",
        )
        terms = sorted(_matched_terms(text.casefold(), tuple(sorted(general))))
        if terms:
            reasons += (f"transferable terms: {', '.join(terms[:5])}",)
    return Classification(
        skill_id=skill.skill_id,
        task_domain=infer_task_domain(skill, policy.domains),
        scope_verdict=verdict,
        reasons=reasons,
    )


__all__ = [
    "DEFAULT_TASK_DOMAINS",
    "Classification",
    "ConflictStrategy",
    "Criterion",
    "PromotionPolicy",
    "PromotionVerdict",
    "ScopeVerdict",
    "TaskDomain",
    "UsageEvidence",
    "classify_skill",
    "infer_task_domain",
    "task_domain_problem",
]
