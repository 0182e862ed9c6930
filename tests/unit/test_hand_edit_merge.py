"""Hand edits are a three-way merge against the version the editor loaded (ADR 0022).

The service on in-memory adapters: stale editor buffers, emptied files, metadata-only edits,
hand-typed secrets, unreadable files, `restore`, and two replicas of one journal.
"""

from __future__ import annotations

import pytest
from pi_hermes_memory.adapters.inmemory.search import InMemorySearchIndex
from pi_hermes_memory.adapters.inmemory.storage import InMemoryMarkdown, InMemoryStorage
from pi_hermes_memory.domain.memory.commands import AddMemory, RemoveMemory, ReplaceMemory
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import MarkdownUnreadable
from pi_hermes_memory.memory.service import MemoryService
from pi_hermes_memory.ports.search import ScopeClause, SearchQuery
from pi_hermes_memory.ports.store import UNCHECKED

from tests.support.builders import service
from tests.support.fakes import StepClock

CLOCK = StepClock()
TOKEN = "ghp_" + "A1b2C3d4" * 4 + "E5f6"


def add(text: str, target: Target = Target.MEMORY, n: list[int] = [0], **kw: object) -> AddMemory:  # noqa: B006
    n[0] += 1
    return AddMemory(target=target, text=text, entry_id=f"c{n[0]}", at=CLOCK.now(), **kw)  # type: ignore[arg-type]


def texts(svc: MemoryService, target: Target = Target.MEMORY) -> list[str]:
    return [e.text for e in svc.entries(target)]


def entries_of(data: bytes) -> list[str]:
    """The entry blocks of a rendered file (without its version line)."""
    body = data.decode().split("\n", 1)[1]
    return [block for block in body.strip().split("\n§\n") if block]


def save(
    md: InMemoryMarkdown, blocks: list[str], first_line: str | None, target: Target = Target.MEMORY
) -> None:
    """What an editor writes: the version line it loaded (if any) and the entry blocks."""
    head = "" if first_line is None else first_line + "\n"
    md.files[target] = (head + "\n§\n".join(blocks) + "\n").encode()


def version_line(md: InMemoryMarkdown, target: Target = Target.MEMORY) -> str:
    return md.files[target].decode().split("\n", 1)[0]


def test_stale_buffer_keeps_what_the_editor_never_saw() -> None:
    """The issue's reproduction: the editor loaded {alpha}, the agent then added gamma, the
    person saves {alpha, delta}: gamma survives and delta is imported."""
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("alpha entry one"))
    loaded_line, loaded = version_line(md), entries_of(md.files[Target.MEMORY])
    assert svc.execute(add("gamma acknowledged by the agent")).status == "added"
    save(md, [*loaded, "hand added delta"], loaded_line)
    assert texts(svc) == ["alpha entry one", "gamma acknowledged by the agent", "hand added delta"]


def test_stale_buffer_deletion_removes_only_what_the_person_deleted() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("alpha stays"))
    svc.execute(add("beta is deleted by hand"))
    loaded_line, loaded = version_line(md), entries_of(md.files[Target.MEMORY])
    svc.execute(add("gamma added while the editor was open"))
    save(md, loaded[:1], loaded_line)
    assert texts(svc) == ["alpha stays", "gamma added while the editor was open"]


def test_deleting_the_newest_entry_by_hand_works() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("older fact"))
    svc.execute(add("the agent just saved this by mistake"))
    save(md, entries_of(md.files[Target.MEMORY])[:1], version_line(md))
    assert texts(svc) == ["older fact"]


def test_entry_the_agent_removed_is_not_resurrected_by_a_stale_buffer() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("obsolete convention about tabs"))
    svc.execute(add("another fact"))
    loaded_line, loaded = version_line(md), entries_of(md.files[Target.MEMORY])
    svc.execute(RemoveMemory(target=Target.MEMORY, old_text="tabs", at=CLOCK.now()))
    save(md, [*loaded, "typed by the person"], loaded_line)
    assert texts(svc) == ["another fact", "typed by the person"]


def test_both_sides_changed_one_entry_keeps_both_versions() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("the port is 8080"))
    loaded_line, loaded = version_line(md), entries_of(md.files[Target.MEMORY])
    svc.execute(
        ReplaceMemory(
            target=Target.MEMORY,
            old_text="8080",
            text="the port is 9090",
            entry_id="r1",
            at=CLOCK.now(),
        )
    )
    edited = loaded[0].replace("the port is 8080", "the port is 7070")
    save(md, [edited], loaded_line)
    assert sorted(texts(svc)) == ["the port is 7070", "the port is 9090"]
    assert any("both versions are kept" in w for w in svc.warnings)


def test_revision_by_hand_supersedes_with_history() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("the build uses make"))
    line, blocks = version_line(md), entries_of(md.files[Target.MEMORY])
    save(md, [blocks[0].replace("uses make", "uses just")], line)
    listed = svc.entries(Target.MEMORY, include_history=True)
    assert [(e.text, e.superseded_by is None) for e in listed] == [
        ("the build uses just", True),
        ("the build uses make", False),
    ]


@pytest.mark.parametrize("emptied", [b"", b"\n\n  \n"])
def test_an_emptied_file_is_treated_like_a_deleted_one(emptied: bytes) -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("must survive an emptied file"))
    md.files[Target.MEMORY] = emptied
    assert texts(svc) == ["must survive an emptied file"]
    assert b"must survive an emptied file" in md.files[Target.MEMORY]
    assert any("was emptied" in w for w in svc.warnings)


def test_deleting_every_entry_but_keeping_the_version_line_deletes_them() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("first"))
    svc.execute(add("second"))
    md.files[Target.MEMORY] = (version_line(md) + "\n").encode()
    assert texts(svc) == []


def test_without_a_version_line_the_last_render_is_the_base() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("kept fact"))
    svc.execute(add("deleted fact"))
    save(md, entries_of(md.files[Target.MEMORY])[:1], None)
    assert texts(svc) == ["kept fact"]


def test_a_file_from_another_store_only_adds() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("ours"))
    foreign = "<!-- pi-hermes-memory: memory v1, store 0123456789abcdef (x) -->"
    save(md, ["theirs <!-- created=2026-01-01, last=2026-01-01 -->"], foreign)
    assert texts(svc) == ["ours", "theirs"]
    assert any("another store" in w for w in svc.warnings)


def test_metadata_only_edits_are_imported() -> None:
    md = InMemoryMarkdown()
    storage = InMemoryStorage()
    svc = service(storage, md, project="web")
    svc.execute(add("deploys need the VPN", Target.PROJECT))
    line, blocks = version_line(md, Target.PROJECT), entries_of(md.files[Target.PROJECT])
    edited = (
        blocks[0]
        .replace("project=web", "project=api")
        .replace("created=2026-07-29", "created=2025-01-02")
    )
    save(md, [edited], line, Target.PROJECT)
    doc = svc.document(Target.PROJECT)
    (entry,) = doc.active
    assert (entry.project, entry.created.isoformat()) == ("api", "2025-01-02")
    row = storage.rows[entry.id]
    assert (row["project"], str(row["created"])) == ("api", "2025-01-02")


def test_adding_project_by_hand_attributes_an_unattributed_entry() -> None:
    """The tool's warning tells people to add project= by hand: that must take effect."""
    md = InMemoryMarkdown()
    storage = InMemoryStorage()
    svc = service(storage, md, project="web")
    md.files[Target.PROJECT] = b"written without attribution <!-- created=2026-07-01 -->\n"
    (entry,) = svc.document(Target.PROJECT).active
    assert entry.project is None and entry.id not in storage.rows
    line, blocks = version_line(md, Target.PROJECT), entries_of(md.files[Target.PROJECT])
    save(md, [blocks[0].replace("-->", ", project=web -->")], line, Target.PROJECT)
    (after,) = svc.document(Target.PROJECT).active
    assert after.id == entry.id and after.project == "web"
    assert storage.rows[entry.id]["project"] == "web"


def test_scope_edit_by_hand_moves_the_entry_between_namespaces() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("lint with ruff"))
    line, blocks = version_line(md), entries_of(md.files[Target.MEMORY])
    save(md, [blocks[0].replace("-->", ", scope=agent:coder -->")], line)
    (entry,) = svc.document(Target.MEMORY).active
    assert entry.namespace == "agent:coder"


def test_hand_typed_secret_is_flagged_kept_and_out_of_search() -> None:
    md = InMemoryMarkdown()
    storage = InMemoryStorage()
    svc = service(storage, md)
    svc.execute(add("rotate the github token monthly"))
    line, blocks = version_line(md), entries_of(md.files[Target.MEMORY])
    save(md, [*blocks, f"my github token is {TOKEN}"], line)
    listed = svc.entries(Target.MEMORY)
    assert [e.text for e in listed][1] == f"my github token is {TOKEN}"  # nothing deleted
    assert listed[1].flagged and TOKEN not in listed[1].flagged
    assert any("fails the content scan" in w for w in svc.warnings)
    index = InMemorySearchIndex(storage)
    query = SearchQuery(text="github token", clauses=(ScopeClause(Target.MEMORY),), limit=5)
    assert [h.text for h in index.search(query)] == ["rotate the github token monthly"]
    # fixing the text by hand clears the flag
    line, blocks = version_line(md), entries_of(md.files[Target.MEMORY])
    save(md, [blocks[0], blocks[1].replace(TOKEN, "<in the password manager>")], line)
    fixed = svc.entries(Target.MEMORY)[1]
    assert fixed.flagged is None and "password manager" in fixed.text
    assert len(index.search(query)) == 2


def test_an_unreadable_file_blocks_only_its_own_writes() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    svc.execute(add("global fact"))
    svc.execute(add("user likes tea", Target.USER))
    damaged = md.files[Target.USER] + b"\xff broken"
    md.files[Target.USER] = damaged
    assert texts(svc) == ["global fact"]  # list of another file works
    assert sorted(e.text for e in svc.entries()) == ["global fact", "user likes tea"]
    assert svc.execute(add("another global fact")).status == "added"
    with pytest.raises(MarkdownUnreadable, match="not valid UTF-8"):
        svc.execute(add("user likes coffee", Target.USER))
    assert md.files[Target.USER] == damaged
    assert any("not valid UTF-8" in w for w in svc.warnings)


def test_restore_undoes_a_deletion_by_hand_with_the_old_id() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md)
    kept = svc.execute(add("kept")).entry_id
    gone = svc.execute(add("deleted by hand, then wanted back")).entry_id
    save(md, entries_of(md.files[Target.MEMORY])[:1], version_line(md))
    assert texts(svc) == ["kept"]
    assert [r.entry.id for r in svc.removed(Target.MEMORY)] == [gone]
    result = svc.restore(Target.MEMORY, "wanted back")
    assert (result.status, result.entry_id, result.action) == ("restored", gone, "restore")
    assert [e.id for e in svc.entries(Target.MEMORY)] == [kept, gone]
    assert svc.removed(Target.MEMORY) == []
    assert svc.restore(Target.MEMORY, "wanted back").status == "not_found"


def test_restore_by_id_ambiguity_and_active_duplicates() -> None:
    svc = service()
    a = svc.execute(add("fact about deploy one")).entry_id
    svc.execute(add("fact about deploy two"))
    for text in ("one", "two"):
        svc.execute(RemoveMemory(target=Target.MEMORY, old_text=text, at=CLOCK.now()))
    ambiguous = svc.restore(Target.MEMORY, "deploy")
    assert ambiguous.status == "ambiguous" and len(ambiguous.candidates) == 2
    assert texts(svc) == []
    assert a is not None
    assert svc.restore(Target.MEMORY, a).status == "restored"
    svc.execute(add("fact about deploy two", force=True))
    assert svc.restore(Target.MEMORY, "deploy two").status == "noop"


def test_two_replicas_of_one_journal_never_delete_each_others_entries() -> None:
    """Two agent roots share one journal, each renders its own file: a plain read by one
    must not import the other's render as a hand edit (ADR 0022)."""
    storage = InMemoryStorage()
    lock = __import__("threading").RLock()
    md_a, md_b = InMemoryMarkdown("root-a", lock=lock), InMemoryMarkdown("root-b", lock=lock)
    a, b = service(storage, md_a, project="web"), service(storage, md_b, project="web")
    a.execute(add("from root a", Target.PROJECT))
    md_b.files[Target.PROJECT] = (
        b"root b had this before <!-- created=2026-01-01, project=web -->\n"
    )
    assert sorted(texts(b, Target.PROJECT)) == ["from root a", "root b had this before"]
    b.execute(add("from root b", Target.PROJECT))
    for svc in (a, b, a):
        assert sorted(texts(svc, Target.PROJECT)) == [
            "from root a",
            "from root b",
            "root b had this before",
        ]
    assert md_a.files[Target.PROJECT] == md_b.files[Target.PROJECT]


class SavesDuringRender(InMemoryMarkdown):
    """A person saves the file after the service read it and before it renders it."""

    def __init__(self) -> None:
        super().__init__()
        self.save: bytes | None = None

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        if self.save is not None:
            self.files[target], self.save = self.save, None
        super().write(target, data, expected=expected)


def test_a_save_made_during_a_render_is_never_replaced() -> None:
    md = SavesDuringRender()
    svc = service(markdown=md)
    svc.execute(add("first fact"))
    line, blocks = version_line(md), entries_of(md.files[Target.MEMORY])
    person = (line + "\n" + "\n§\n".join([*blocks, "typed while the agent wrote"]) + "\n").encode()
    md.save = person
    assert svc.execute(add("second fact")).status == "added"
    # the render stood back, and the same operation imported the save (ADR 0116): the file
    # is the render of both before any later read
    assert b"typed while the agent wrote" in md.files[Target.MEMORY]
    assert b"second fact" in md.files[Target.MEMORY]
    assert sorted(texts(svc)) == ["first fact", "second fact", "typed while the agent wrote"]


def test_restore_brings_back_the_entry_as_it_was_when_removed() -> None:
    md = InMemoryMarkdown()
    svc = service(markdown=md, project="web")
    svc.execute(add("the port is 8080", Target.PROJECT))
    svc.execute(
        ReplaceMemory(
            target=Target.PROJECT,
            old_text="8080",
            text="the port is 9090",
            entry_id="r9",
            at=CLOCK.now(),
        )
    )
    line, blocks = version_line(md, Target.PROJECT), entries_of(md.files[Target.PROJECT])
    save(md, [blocks[0].replace("created=2026-07-29", "created=2025-05-05")], line, Target.PROJECT)
    svc.execute(RemoveMemory(target=Target.PROJECT, old_text="9090", at=CLOCK.now()))
    (removed,) = svc.removed(Target.PROJECT)
    assert (removed.entry.id, removed.entry.text) == ("r9", "the port is 9090")
    assert removed.entry.created.isoformat() == "2025-05-05"  # the hand-edited metadata
    assert svc.restore(Target.PROJECT, "r9").status == "restored"
    (entry,) = svc.document(Target.PROJECT).active
    assert (entry.id, entry.created.isoformat()) == ("r9", "2025-05-05")
