"""The one status vocabulary of every result the library returns (documented in docs/tools.md).

A `Status` is a `str` (StrEnum), so results compare equal to the documented strings and
serialise to them in JSON unchanged; code inside the library names members, never literals.
"""

from __future__ import annotations

import enum


class Status(enum.StrEnum):
    # writes (the memory tool, the public API)
    ADDED = "added"
    REPLACED = "replaced"
    REMOVED = "removed"
    PROMOTED = "promoted"
    DEMOTED = "demoted"
    MERGED = "merged"
    NOOP = "noop"
    RESTORED = "restored"
    #: an id names an old version (replaced or merged); `entry_id` is the current one (ADR 0028)
    SUPERSEDED = "superseded"
    #: an id names an entry that left the document (removed, evicted, moved); see restore
    GONE = "gone"
    PURGED = "purged"
    #: a dry run (purge): what would happen; nothing was changed
    PREVIEW = "preview"
    NEAR_DUPLICATE = "near_duplicate"
    CAPACITY_EXCEEDED = "capacity_exceeded"
    NEEDS_CONSOLIDATION = "needs_consolidation"
    #: a consolidation applied its plan (issue 12 §4)
    CONSOLIDATED = "consolidated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    AMBIGUOUS = "ambiguous"
    INVALID = "invalid"
    BLOCKED = "blocked"
    # the skill tool (issue 11)
    CREATED = "created"
    PATCHED = "patched"
    UPDATED = "updated"
    DELETED = "deleted"
    FILE_WRITTEN = "file_written"
    FILE_REMOVED = "file_removed"
    #: create: a skill with this id exists (patch it instead)
    DUPLICATE = "duplicate"
    #: create: a global skill with a similar name and description exists (patch it instead)
    SIMILAR = "similar"
    #: create: a global skill with a similar name but another purpose exists (rename)
    NAME_COLLISION = "name-collision"
    # skill governance (issue 11 §5, ADR 0031)
    #: a skill with the destination's id exists and the conflict strategy is block
    CONFLICT = "conflict"
    #: the project's curation lease is held by a running or queued job: retry later
    BUSY = "busy"
    #: an automatic curation did not run (cooldown, failure cap, no project, ...)
    SKIPPED = "skipped"
    # every tool
    INVALID_ARGUMENTS = "invalid_arguments"
    UNKNOWN_TOOL = "unknown_tool"
    ERROR = "error"
    # searches and batches
    OK = "ok"
    NO_RESULTS = "no_results"
    PARTIAL = "partial"
    FAILED = "failed"
    # recovery
    HEALTHY = "healthy"
    RECOVERED = "recovered"
    REBUILT_FROM_MARKDOWN = "rebuilt-from-markdown"
    # background learning (review, flush, correction capture): the LLM is off
    OFF = "off"


#: Write statuses that mean the write did what was asked (or had nothing to do).
SUCCESS = frozenset(
    {
        Status.ADDED,
        Status.REPLACED,
        Status.REMOVED,
        Status.PROMOTED,
        Status.DEMOTED,
        Status.MERGED,
        Status.CONSOLIDATED,
        Status.NOOP,
        Status.RESTORED,
        Status.CREATED,
        Status.PATCHED,
        Status.UPDATED,
        Status.DELETED,
        Status.FILE_WRITTEN,
        Status.FILE_REMOVED,
    }
)
