"""The promotion policy in effect, the curated policy words, and the restore backup (ADR 0031).

The policy is the static configuration (`skillGovernance.*`) plus a project's curated words:
the task-domain terms and scope-policy words a curation child submitted through
`skill_governance_curate`. Curated words can only add vocabulary: a curated task domain replaces
the terms (and description) of the configured or built-in domain with its id, or adds a domain;
curated scope-policy words are added to ``promotionDomainTerms``. Thresholds, the conflict
strategy, ``promotionEnabled`` and every timing parameter come from the configuration only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs
from pi_hermes_memory.config.settings import SkillGovernanceConfig
from pi_hermes_memory.domain.skills.move import SkillContent
from pi_hermes_memory.domain.skills.promotion import PromotionPolicy, TaskDomain
from pi_hermes_memory.skills.stats import promotion_policy as configured_policy

__all__ = ["CuratedWords", "MoveBackup", "effective_policy"]


@attrs.frozen(kw_only=True)
class CuratedWords:
    """A project's curated task domains and scope-policy words."""

    task_domains: tuple[TaskDomain, ...] = ()
    scope_policy_words: tuple[str, ...] = ()

    def to_data(self) -> str:
        return json.dumps(
            {
                "task_domains": [
                    {"id": d.id, "description": d.description, "terms": list(d.terms)}
                    for d in self.task_domains
                ],
                "scope_policy_words": list(self.scope_policy_words),
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_data(cls, text: str) -> CuratedWords:
        """Raises ValueError when `text` is not what `to_data` writes."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("curated words must be a JSON object")
        domains = []
        for item in data.get("task_domains", []):
            terms = item["terms"]
            if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
                raise ValueError("terms must be a list of strings")
            domains.append(
                TaskDomain(
                    id=str(item["id"]),
                    description=str(item.get("description", "")),
                    terms=tuple(terms),
                )
            )
        words = data.get("scope_policy_words", [])
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise ValueError("scope_policy_words must be a list of strings")
        return cls(task_domains=tuple(domains), scope_policy_words=tuple(words))

    def merged(
        self, task_domains: Sequence[TaskDomain] | None, words: Sequence[str] | None
    ) -> CuratedWords:
        """These words after a submission: each submitted domain replaces the curated one of
        its id (or is added); submitted words replace the curated words."""
        domains = {d.id: d for d in self.task_domains}
        for domain in task_domains or ():
            domains[domain.id] = domain
        return CuratedWords(
            task_domains=tuple(domains.values()),
            scope_policy_words=self.scope_policy_words if words is None else tuple(words),
        )


def effective_policy(
    config: SkillGovernanceConfig, curated: CuratedWords | None
) -> PromotionPolicy:
    """The policy of the static configuration (`skill_stats.promotion_policy`) plus the
    curated words."""
    policy = configured_policy(config)
    if curated is None or not (curated.task_domains or curated.scope_policy_words):
        return policy
    by_id = {d.id: d for d in policy.domains}
    for domain in curated.task_domains:
        old = by_id.get(domain.id)
        by_id[domain.id] = attrs.evolve(
            domain, description=domain.description or (old.description if old else "")
        )
    return attrs.evolve(
        policy,
        task_domains=tuple(by_id.values()),
        domain_terms=tuple(dict.fromkeys((*policy.domain_terms, *curated.scope_policy_words))),
    )


def _content_json(content: SkillContent | None) -> dict[str, Any] | None:
    if content is None:
        return None
    return {
        "slug": content.slug,
        "display_name": content.display_name,
        "description": content.description,
        "body": content.body,
        "extra_frontmatter": content.extra_frontmatter,
        "files": [[path, text] for path, text in content.files],
    }


def _content(data: Any) -> SkillContent | None:
    if data is None:
        return None
    return SkillContent(
        slug=str(data["slug"]),
        display_name=data["display_name"],
        description=str(data["description"]),
        body=str(data["body"]),
        extra_frontmatter=str(data["extra_frontmatter"]),
        files=tuple((str(p), str(t)) for p, t in data["files"]),
    )


@attrs.frozen(kw_only=True)
class MoveBackup:
    """What `restore` needs to undo a promote or demote, kept in the destination's governance
    record: the moved skill as it was (`content`), the destination's content it replaced
    (`replaced`, conflict strategy overwrite) and the destination's stream version right
    after the move (a later change is not discarded silently)."""

    action: str  # "promote" or "demote"
    source: str
    dest: str
    dest_version: int
    content: SkillContent
    replaced: SkillContent | None = None

    def encode(self) -> str:
        return json.dumps(
            {
                "v": 1,
                "action": self.action,
                "source": self.source,
                "dest": self.dest,
                "dest_version": self.dest_version,
                "content": _content_json(self.content),
                "replaced": _content_json(self.replaced),
            },
            ensure_ascii=False,
        )

    @classmethod
    def decode(cls, text: str) -> MoveBackup:
        """Raises ValueError when `text` is not a backup this release wrote."""
        try:
            data = json.loads(text)
            if data.get("v") != 1:
                raise ValueError(f"unknown backup version {data.get('v')!r}")
            content = _content(data["content"])
            if content is None:
                raise ValueError("the backup holds no skill")
            return cls(
                action=str(data["action"]),
                source=str(data["source"]),
                dest=str(data["dest"]),
                dest_version=int(data["dest_version"]),
                content=content,
                replaced=_content(data["replaced"]),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"the backup does not decode: {exc}") from exc
