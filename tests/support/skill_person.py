"""The person's side of the skill state machine (`skill_machine.py`): hand edits of SKILL.md
and support files, a folder deleted or written by hand, text the content scanner refuses, and
the fix. Mixed into `SkillMachine`, whose state and helpers these rules use."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from pi_hermes_memory.domain.skills.skill_md import clean_extra
from pi_hermes_memory.domain.status import Status
from pi_hermes_memory.errors import MarkdownUnreadable
from pi_hermes_memory.skills.service import SkillResult

from tests.support.skill_model import (
    CRASHES,
    PATHS,
    SCOPES,
    SECRET,
    WORDS,
    Blocked,
    Expected,
    skill_id,
)


class PersonRules:
    """Rules of the person; `self` is the `SkillMachine`."""

    live: dict[str, Expected]
    blocked: dict[str, Blocked]
    versions: dict[str, int]
    known: set[str]
    svc: Any

    def edit_skill_md(
        self, sid: str, change: Callable[[list[str], str], tuple[list[str], str]], *, crlf: bool
    ) -> None:
        """Rewrite SKILL.md as a person would: the frontmatter lines and the body."""
        raw = self.skill_md(sid).read_bytes().decode("utf-8")
        was_crlf = "\r\n" in raw
        lines = raw.replace("\r\n", "\n").split("\n")
        assert lines[0] == "---", raw
        end = lines.index("---", 1)
        front, body = change(lines[1:end], "\n".join(lines[end + 1 :]))
        text = "---\n" + "".join(f"{line}\n" for line in front) + "---\n" + body
        if crlf or was_crlf:
            text = text.replace("\n", "\r\n")
        self.skill_md(sid).write_bytes(text.encode("utf-8"))

    def hand_edit_once(self, data: Any, sid: str, kind: str, *, settled: bool = True) -> None:
        """One save by the person. On a folder whose render was cut short (not `settled`) the
        person only rewrites fields or support files: deleting a file there is ambiguous
        (not written yet, or deleted?) and the journal's side wins."""
        expected = self.live[sid]
        if kind == "description":
            new = self.text("hand described")
            self.edit_skill_md(
                sid,
                lambda front, body: (
                    [f"description: {new}" if x.startswith("description:") else x for x in front],
                    body,
                ),
                crlf=False,
            )
            expected.description = new
        elif kind == "body":
            new = f"## Hand\n\n{self.text('hand body')}"
            self.edit_skill_md(sid, lambda front, body: (front, f"\n{new}\n"), crlf=False)
            expected.body = new
        elif kind == "crlf":
            self.edit_skill_md(sid, lambda front, body: (front, body), crlf=True)
        elif kind == "extra":
            n = next(self.counter)
            added = (
                [f"x-note-{n}: value {n}"]
                if data.draw(st.booleans(), label="flat key")
                else [f"metadata-{n}:", f"  owner: team {n}", "  tags:", "    - skills"]
            )
            self.edit_skill_md(sid, lambda front, body: ([*front, *added], body), crlf=False)
            expected.extra = clean_extra("\n".join([expected.extra, *added]))
        elif kind == "no_version":
            self.edit_skill_md(
                sid,
                lambda front, body: ([x for x in front if not x.startswith("version:")], body),
                crlf=False,
            )
        elif kind == "support":
            path = data.draw(st.sampled_from(PATHS), label="support path")
            content = self.text("hand file") + "\n"
            if settled and path in expected.files and data.draw(st.booleans(), label="delete"):
                (self.folder(sid) / path).unlink()
                del expected.files[path]
            else:
                target = self.folder(sid) / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content.encode("utf-8"))
                expected.files[path] = content
        else:
            raise AssertionError(kind)

    @precondition(lambda self: self.writable())
    @rule(
        data=st.data(),
        kinds=st.lists(
            st.sampled_from(["description", "body", "crlf", "extra", "no_version", "support"]),
            min_size=1,
            max_size=3,
        ),
        then=st.sampled_from(
            ["nothing", "get", "patch", "update", "delete", "write_file", "remove_file"]
        ),
        crash=CRASHES,
    )
    def hand_edit(self, data: Any, kinds: list[str], then: str, crash: int | None) -> None:
        """A person edits the folder; the agent's next action (if any) imports it first."""
        sid = data.draw(st.sampled_from(self.writable()), label="skill")
        for kind in kinds:
            self.hand_edit_once(data, sid, kind)
        if then == "nothing":
            return
        if then == "get":
            got = self.svc.get(sid)
            self.sync([sid])
            assert got is not None and got.revision == self.live[sid].revision
            return
        self.do(then, data, sid, crash=self.crash_after(crash))

    @precondition(lambda self: self.writable())
    @rule(
        data=st.data(),
        action=st.sampled_from(["patch", "update", "write_file", "remove_file"]),
        steps=st.integers(0, 3),
        kinds=st.lists(
            st.sampled_from(["description", "body", "crlf", "extra", "no_version", "support"]),
            min_size=1,
            max_size=3,
        ),
    )
    def hand_edit_after_a_crash(self, data: Any, action: str, steps: int, kinds: list[str]) -> None:
        """The render of a tool write dies midway; before anything reads the store again, a
        person edits the half-rendered folder: their edit and the committed write both stay."""
        sid = data.draw(st.sampled_from(self.writable()), label="skill")
        self.do(action, data, sid, crash=self.crash_after(steps))
        if sid not in self.live or not self.skill_md(sid).is_file():
            return
        for kind in kinds:
            self.hand_edit_once(data, sid, kind, settled=False)

    @precondition(lambda self: self.writable())
    @rule(data=st.data())
    def hand_delete_folder(self, data: Any) -> None:
        sid = data.draw(st.sampled_from(self.writable()), label="skill")
        shutil.rmtree(self.folder(sid))
        del self.live[sid]
        self.versions.pop(sid, None)

    @rule(
        data=st.data(),
        scope=st.sampled_from(SCOPES),
        word=st.sampled_from(WORDS),
        version=st.none() | st.integers(1, 40),
        crlf=st.booleans(),
    )
    def hand_create(
        self, data: Any, scope: str, word: str, version: int | None, crlf: bool
    ) -> None:
        """A person (or another tool) writes a new skill folder."""
        sid = skill_id(scope, word)
        if sid in self.live or sid in self.blocked:
            return
        description = self.text("hand made")
        body = f"# {word}\n\n{self.text('hand steps')}"
        front = ["---", f"name: {word}", f"description: {description}"]
        if version is not None:
            front.append(f"version: {version}")
        extra = "license: MIT" if data.draw(st.booleans(), label="license") else ""
        if extra:
            front.append(extra)
        text = "\n".join([*front, "---", "", body, ""])
        if crlf:
            text = text.replace("\n", "\r\n")
        files: dict[str, str] = {}
        if data.draw(st.booleans(), label="support file"):
            files["references/notes.md"] = self.text("hand file") + "\n"
        folder = self.folder(sid)
        folder.mkdir(parents=True, exist_ok=True)
        for path, content in files.items():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            (folder / path).write_text(content, encoding="utf-8")
        (folder / "SKILL.md").write_bytes(text.encode("utf-8"))
        self.known.add(sid)
        self.live[sid] = Expected(
            description=description,
            body=body,
            extra=extra,
            files=files,
            revision=version or 1,
        ).settle()
        self.versions.pop(sid, None)

    @rule(
        scope=st.sampled_from(SCOPES),
        word=st.sampled_from(WORDS),
        where=st.sampled_from(["body", "description", "extra key", "name", "display_name"]),
        keep=st.sampled_from([False, False, True]),
    )
    def hand_save_refused_text(self, scope: str, word: str, where: str, keep: bool) -> None:
        """A person saves a secret into SKILL.md (a live skill's or a new folder's): it is
        never imported, and the folder is left as the person wrote it. Unless they `keep` it
        for later steps, the agent reads the skill once and the person then puts it right."""
        sid = skill_id(scope, word)
        if sid in self.blocked:
            return
        self.known.add(sid)
        leak = f"uses {SECRET} to deploy"

        def change(front: list[str], body: str) -> tuple[list[str], str]:
            if where == "body":
                return front, f"\n{leak}\n"
            keep = [x for x in front if not x.startswith(("name:", "display_name:"))]
            if where == "description":
                keep = [x for x in keep if not x.startswith("description:")]
                return [f"name: {word}", f"description: {leak}", *keep], body
            if where == "extra key":
                return [f"name: {word}", *keep, f"x-secret: {leak}"], body
            if where == "name":  # a name that is not the folder's is the display name
                return [f"name: {leak}", *keep], body
            return [f"name: {word}", f"display_name: {leak}", *keep], body

        if sid in self.live:
            self.sync([sid])
            before: bytes | None = self.skill_md(sid).read_bytes()
        else:
            before = None
            self.folder(sid).mkdir(parents=True, exist_ok=True)
            self.skill_md(sid).write_text(
                f"---\nname: {word}\ndescription: hand made\n---\n\nbody\n", encoding="utf-8"
            )
        self.edit_skill_md(sid, change, crlf=False)
        self.blocked[sid] = Blocked(person=self.skill_md(sid).read_bytes(), before=before)
        if keep:
            return
        got = self.svc.get(sid)
        assert (got is not None) == (sid in self.live), sid
        assert self.skill_md(sid).read_bytes() == self.blocked[sid].person
        self.fix(sid)

    @precondition(lambda self: self.blocked)
    @rule(
        data=st.data(),
        action=st.sampled_from(["create", "patch", "update", "delete", "write_file"]),
    )
    def change_a_refused_folder(self, data: Any, action: str) -> None:
        """A write to a skill whose folder holds refused text raises and writes nothing."""
        sid = data.draw(st.sampled_from(sorted(self.blocked)), label="blocked")
        scope, _, word = sid.rpartition(":")
        calls: dict[str, Callable[[], SkillResult]] = {
            "create": lambda: self.svc.create(
                scope="global" if scope == "global" else "project",
                name=word,
                description="again",
                content="again",
            ),
            "patch": lambda: self.svc.patch(sid, section="Notes", content="more"),
            "update": lambda: self.svc.update(sid, description="new words"),
            "delete": lambda: self.svc.delete(sid),
            "write_file": lambda: self.svc.write_file(sid, "references/x.md", "x"),
        }
        self.sync()
        try:
            result = calls[action]()
        except MarkdownUnreadable:
            return
        # a create of an id that lives is refused before its folder is read
        assert action == "create" and sid in self.live, result
        self.check(result, Status.DUPLICATE)

    @precondition(lambda self: self.blocked)
    @rule(data=st.data())
    def fix_refused_folder(self, data: Any) -> None:
        """The person puts back what the file held (or removes their new folder)."""
        self.fix(data.draw(st.sampled_from(sorted(self.blocked)), label="blocked"))

    def fix(self, sid: str) -> None:
        blocked = self.blocked.pop(sid)
        if blocked.before is None:
            shutil.rmtree(self.folder(sid))
        else:
            self.skill_md(sid).write_bytes(blocked.before)
