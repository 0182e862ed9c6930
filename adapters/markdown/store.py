"""Where the Markdown memory files live, and raw byte access to them.

Bytes, not text: decoding and parsing belong to `format.py`, and keeping the raw bytes lets a
caller back up a file it cannot parse exactly as it was.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from pathlib import Path
from typing import Any, BinaryIO

import attrs
from pi_hermes_memory.adapters.markdown.atomic import (
    FileLock,
    atomic_write,
    discard_temp,
    replace_temp,
    stale_temp_files,
    write_all,
    write_temp,
)
from pi_hermes_memory.domain.memory.model import Target
from pi_hermes_memory.errors import (
    MarkdownChanged,
    MarkdownTooLarge,
    MarkdownUnreadable,
    StorageFailed,
)
from pi_hermes_memory.ports.store import UNCHECKED

__all__ = ["LOCK_FILE_NAME", "MarkdownFiles", "read_only_file"]

LOCK_FILE_NAME = ".pi-hermes-memory.lock"
# a file being saved in place settles within milliseconds
_STABLE_READ_TRIES = 5
_STABLE_READ_WAIT_S = 0.01
#: ADR 0115: see `MarkdownFiles.quiet_s`
QUIET_S = 0.25
QUIET_MAX_S = 2.0
#: A memory file above this is not read (MarkdownTooLarge): parsing and importing it would hold
#: the store lock for minutes (ADR 0024); 16 MiB holds ~100,000 entries of ~150 bytes.
MAX_FILE_BYTES = 16 * 2**20
#: Temp files of our documents found under the store lock are a killed writer's whatever their
#: age: every writer of these files holds that lock while its temp file exists (ADR 0024).
STALE_TEMP_AGE_S = 0.0
_GLOBAL_FILES = {
    Target.MEMORY: "MEMORY.md",
    Target.USER: "USER.md",
    Target.FAILURE: "failures.md",
}


#: bytes copied per read when a render appends (ADR 0088): the old bytes are streamed, never held
_COPY_CHUNK = 1 << 20


@attrs.frozen
class _Hashed:
    """Bytes this process hashed after `prefix`, and the sha256 state after them: a fact about
    those bytes alone (equal bytes, equal digest), true whatever a file holds now."""

    prefix: bytes
    #: the bytes are `head + tail`, kept apart: no copy of a file's bytes is made to remember them
    head: bytes
    tail: bytes
    state: Any  # a hashlib sha256 object, copied before each use

    def holds(self, prefix: bytes, data: bytes) -> bool:
        """Whether these are exactly the bytes remembered, after the same prefix."""
        return (
            prefix == self.prefix
            and len(data) == len(self.head) + len(self.tail)
            and data.startswith(self.head)
            and data.endswith(self.tail)
        )


def _copy_known(
    source: BinaryIO, fd: int, prefix: bytes, known: _Hashed | None, *also: hashlib._Hash
) -> tuple[Any, int, bytes, bytes | None]:
    """Copy the rest of `source` to the descriptor `fd`, feeding `also`: (the sha256 of
    `prefix` and the bytes copied, their size, the last byte, the bytes when they fit in one
    read). That sha256 is `known`'s when `known` holds exactly these bytes after this prefix
    (compared byte for byte: the render this process just wrote), else computed (ADR 0119)."""
    chunk = source.read(_COPY_CHUNK)
    more = source.read(_COPY_CHUNK) if chunk else b""
    if not more and known is not None and known.holds(prefix, chunk):
        digest = known.state.copy()
    else:
        digest = hashlib.sha256(prefix)
        digest.update(chunk)
    for other in also:
        other.update(chunk)
    write_all(fd, chunk)
    size, last, whole = len(chunk), chunk[-1:], None if more else chunk
    while more:
        digest.update(more)
        for other in also:
            other.update(more)
        write_all(fd, more)
        size, last = size + len(more), more[-1:]
        more = source.read(_COPY_CHUNK)
    return digest, size, last, whole


def _remembered(prefix: bytes, whole: bytes | None, tail: bytes, state: Any) -> _Hashed | None:
    """What an append wrote (`whole` copied, then `tail`) with its sha256 `state`, to be
    remembered when it fits in one read; None otherwise."""
    if whole is None or len(whole) + len(tail) > _COPY_CHUNK:
        return None
    return _Hashed(prefix=prefix, head=whole, tail=tail, state=state.copy())


def sidecar_name(file_name: str) -> str:
    """`MEMORY.md` -> `.MEMORY.md.meta`: hidden, and not a `.md` file for anyone to load."""
    return f".{file_name}.meta"


def read_only_file(path: Path) -> bool:
    """Whether an existing file has no write permission bit, or this process may not write it
    (the mode bits count even for root: chmod 0444 says "leave this file alone")."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not mode & 0o222 or not os.access(path, os.W_OK)


def _held_for_writing(path: Path) -> bool | None:
    """Whether some process holds `path` open for writing: True, False, or None where this
    cannot be told (not Linux, leases off, a file system or owner that refuses them).

    Linux grants a read lease only while no process has the file open for writing. The
    lease is released at once; a writer that opens the file in between waits those
    microseconds, and the lease-break notice is SIGURG, ignored unless a program asks for it
    (the default SIGIO would end the process)."""
    try:
        import fcntl
        import signal

        set_lease, set_sig = fcntl.F_SETLEASE, fcntl.F_SETSIG
    except (ImportError, AttributeError):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        fcntl.fcntl(fd, set_sig, signal.SIGURG)
        fcntl.fcntl(fd, set_lease, fcntl.F_RDLCK)
    except OSError as exc:
        return True if exc.errno == errno.EAGAIN else None
    else:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, set_lease, fcntl.F_UNLCK)
        return False
    finally:
        os.close(fd)


def _open_for_rescue(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY)
    except OSError:
        return None


def _settled_bytes(fd: int, *, tries: int = 50, wait_s: float = 0.02) -> bytes:
    """The whole content of `fd` once it stops changing (a save in progress finishes)."""
    data = b""
    for _ in range(tries):
        before = os.fstat(fd)
        data = os.pread(fd, before.st_size + 1, 0)
        time.sleep(wait_s)
        after = os.fstat(fd)
        if (before.st_mtime_ns, before.st_size) == (after.st_mtime_ns, after.st_size) and len(
            data
        ) == after.st_size:
            return data
    return data


def _identity(st: os.stat_result) -> tuple[int, int, int]:
    """(mtime_ns, size, inode): what a rename leaves as it was (it changes the ctime)."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _identity_of(stamp: tuple[object, ...]) -> tuple[object, ...]:
    """`_identity`'s fields of a `MarkdownFiles.stamp`."""
    return stamp[:3]


@attrs.frozen
class MarkdownFiles:
    """The memory files of one agent root.

    All project entries share one flat `projects_dir/MEMORY.md`; each entry records its project
    in its metadata (the seed's layout).
    """

    memory_dir: Path
    projects_dir: Path
    #: a hand edit is imported only once its file has been left alone this long (ADR 0115:
    #: an in-place save caught half-written reads as deletions)
    quiet_s: float = QUIET_S
    #: the longest one read waits for that (a file saved again and again is then read as it is)
    quiet_max_s: float = QUIET_MAX_S
    #: per target, the hand edit the last read found (ADR 0077): the render that imports it
    #: records it in the sidecar, so the person's next save from the same buffer finds its base
    _edits: dict[Target, tuple[int, list[str]]] = attrs.field(
        factory=dict, init=False, repr=False, eq=False
    )
    #: a folder -> its physical path, resolved once per process (ADR 0085): a file's own
    #: symlink is still seen by one lstat per use (`_physical`)
    _folders: dict[Path, Path] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    #: per target, the Markdown file's and the sidecar's bytes the last append wrote, with
    #: their sha256 (ADR 0119): the next append that reads the same bytes back compares them
    #: instead of hashing them again. At most one read chunk each (1 MiB)
    _hashed: dict[Target, tuple[_Hashed | None, _Hashed | None]] = attrs.field(
        factory=dict, init=False, repr=False, eq=False
    )
    #: a path whose folder is cached in `_folders` -> that folder / its name (the same join)
    _located: dict[Path, Path] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    #: per target, its file and sidecar paths, built once (ADR 0119): both folders are fixed,
    #: so each is the `Path` every call built anew; a `Path` keeps its own string
    _paths: dict[Target, tuple[Path, Path]] = attrs.field(
        factory=dict, init=False, repr=False, eq=False
    )

    def _paths_of(self, target: Target) -> tuple[Path, Path]:
        known = self._paths.get(target)
        if known is None:
            if target is Target.PROJECT:
                path = self.projects_dir / "MEMORY.md"
            else:
                path = self.memory_dir / _GLOBAL_FILES[target]
            known = self._paths[target] = (path, path.with_name(sidecar_name(path.name)))
        return known

    def path_for(self, target: Target) -> Path:
        return self._paths_of(target)[0]

    def stamp(self, target: Target) -> object:
        """(mtime_ns, size, inode, ctime_ns), or None when the file does not exist."""
        try:
            st = self.path_for(target).stat()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageFailed.from_os_error("stat", self.path_for(target), exc) from exc
        return (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)

    def distinct_roots(self) -> bool:
        """memoryDir and projectsMemoryDir resolve (symlinks included) to different places,
        neither inside the other. Checked again before every move: a move across one physical
        root would write and delete the same file."""
        from pi_hermes_memory.adapters.files.config_file import physical_path

        a, b = physical_path(self.memory_dir), physical_path(self.projects_dir)
        return a != b and a not in b.parents and b not in a.parents

    def describe(self, target: Target) -> str:
        return str(self.path_for(target))

    def replica(self, target: Target) -> str:
        """The file's physical path: the ledger keeps each replica's renders apart, so agent
        roots that share one memoryDir (one journal) never mistake each other's files."""
        return str(self._physical(self.path_for(target)))

    def _physical(self, path: Path) -> Path:
        """`physical_path(path)`, its folder's resolution cached for the process: one lstat
        of the file itself per call, so a file replaced by a symlink is resolved (and refused
        by `link_problem`) at once, never taken for the file it replaced."""
        from pi_hermes_memory.adapters.files.config_file import physical_path

        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                return physical_path(path)
        except FileNotFoundError:
            pass
        except OSError:
            return physical_path(path)
        located = self._located.get(path)
        if located is not None:
            return located
        folder = self._folders.get(path.parent)
        if folder is None:
            if not path.parent.is_dir():
                return physical_path(path)  # not cached until the folder exists
            folder = self._folders[path.parent] = physical_path(path.parent)
        located = self._located[path] = folder / path.name
        return located

    def layout_problem(self) -> str | None:
        """Why these documents cannot be kept apart (two of them are one physical file), or
        None. A store must refuse to open such a layout: every render of one document would
        read as a hand edit of the other (ADR 0022)."""
        seen: dict[object, Target] = {}
        for target in Target:
            path = self.path_for(target)
            keys: list[object] = [self.replica(target)]
            try:
                st = path.stat()
                keys.append((st.st_dev, st.st_ino))  # hard links, bind mounts
            except OSError:
                pass
            for key in keys:
                other = seen.setdefault(key, target)
                if other is not target:
                    return (
                        f"{self.path_for(other)} and {path} are the same file (a symlink, hard "
                        "link or memoryDir = projectsMemoryDir); each memory document needs its "
                        "own file. Nothing was written: point memoryDir and projectsMemoryDir "
                        "at separate folders."
                    )
        return None

    def sidecar_for(self, target: Target) -> Path:
        """Where our version line and metadata live beside the file (ADR 0077)."""
        return self._paths_of(target)[1]

    def read(self, target: Target) -> bytes | None:
        """The document's bytes in our format, or None when the file does not exist yet: the
        Markdown file joined with its sidecar (ADR 0077). Raises StorageFailed, and
        MarkdownTooLarge (the file is not read) above MAX_FILE_BYTES.

        The sidecar is read before and after the file: a writer replaces the file, then the
        sidecar, so two equal sidecar reads around the file's read never pair a file with a
        sidecar newer than it (which would read as a person reverting the last change)."""
        from pi_hermes_memory.adapters.markdown.shared import join_edit

        waited = 0.0
        while True:
            for _ in range(_STABLE_READ_TRIES):
                before = self._read_sidecar(target)
                data = self._read_settled(target)
                after = self._read_sidecar(target)
                if before == after:
                    break
            joined, edit = join_edit(data, after, target)
            wait = self._unquiet(target, data, after, edit)
            if wait <= 0.0 or waited >= self.quiet_max_s:
                break
            wait = min(wait, self.quiet_max_s - waited)
            time.sleep(wait)
            waited += wait
        if edit is None:
            self._edits.pop(target, None)
        else:
            self._edits[target] = edit
        return joined

    def _unquiet(
        self,
        target: Target,
        data: bytes | None,
        sidecar: bytes | None,
        edit: tuple[int, list[str]] | None,
    ) -> float:
        """Seconds to wait before `data` may be imported (ADR 0115). An editor that saves in
        place truncates, then writes; a writer preempted in the middle leaves a stable prefix
        that no stamp check can tell from a finished save. Imported, a prefix reads as the
        person deleting every entry after the cut, and the render that follows replaces the
        file, so the rest of the save lands in an orphaned inode.

        0 when the file was last changed `quiet_s` ago or more, or no process holds it open
        for writing (Linux tells, `_held_for_writing`: a save in place is over once its writer
        closed the file). Otherwise a file waits until it has been left alone for `quiet_s`:
        while a writer holds it open, any file, our render's bytes included (a save in place
        cut exactly where our render ends); where that cannot be told, a file that is not our
        render (a hand edit, an emptied file, a file we cannot place), or has our render's
        bytes written after its sidecar (ADR 0116)."""
        if data is None or self.quiet_s <= 0.0:
            return 0.0
        stamp = self.stamp(target)
        if not isinstance(stamp, tuple):
            return 0.0
        changed_ns: int = max(stamp[0], stamp[3])  # mtime or ctime: whichever is later
        age = (time.time_ns() - changed_ns) / 1e9
        if age >= self.quiet_s:
            return 0.0
        held = _held_for_writing(self.path_for(target))
        if held is False:
            return 0.0
        if held is None:
            from pi_hermes_memory.adapters.markdown.shared import is_our_render

            mine = is_our_render(data, sidecar, edit)
            if mine and not self._saved_after_sidecar(target, stamp):
                return 0.0
        return float(self.quiet_s - max(age, 0.0))

    def _saved_after_sidecar(self, target: Target, stamp: tuple[Any, ...]) -> bool:
        """Whether the file was written after its sidecar: we write a render's file, then its
        sidecar, so a file with our render's bytes and a later mtime is a save in place caught
        after writing exactly those bytes (a person's buffer that extends our render, cut
        where the render ends), not our render (ADR 0116). A file without a sidecar: False."""
        try:
            side = self.sidecar_for(target).stat()
        except OSError:
            return False
        return bool(stamp[0] > side.st_mtime_ns)

    def _read_sidecar(self, target: Target) -> bytes | None:
        path = self.sidecar_for(target)
        try:
            with path.open("rb") as file:
                return file.read(2 * MAX_FILE_BYTES + 256)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise StorageFailed.from_os_error("read", path, exc) from exc

    def _read_settled(self, target: Target) -> bytes | None:
        """The file's bytes, or None when it does not exist yet.

        An editor that saves in place truncates, then writes: bytes read meanwhile would look
        like a person deleting entries. A read is taken only when the file's stamp is the same
        before and after it and its size is what was read (retried a few times)."""
        data: bytes | None = None
        for attempt in range(_STABLE_READ_TRIES):
            before = self.stamp(target)
            data = self._read_once(target)
            after = self.stamp(target)
            size = None if after is None else after[1]  # type: ignore[index]
            if before == after and size == (None if data is None else len(data)):
                return data
            time.sleep(_STABLE_READ_WAIT_S * (attempt + 1))
        return data

    def link_problem(self, target: Target) -> str | None:
        """Why the file of `target` is neither read nor written: it is a symlink whose target
        lies outside the memory folders (memoryDir, projectsMemoryDir, symlinks resolved), so
        a render would rewrite some other file (a key, a config) and a read would import it
        (issue 26 §6). A link that stays inside the folders is followed; to keep the memory
        in another place (a dotfiles repository), link the folder, not the file."""
        from pi_hermes_memory.adapters.files.config_file import physical_path

        path = self.path_for(target)
        if not path.is_symlink():
            return None
        real = physical_path(path)
        roots = (physical_path(self.memory_dir), physical_path(self.projects_dir))
        if any(real.parent == root or root in real.parents for root in roots):
            return None
        return (
            f"{path} is a symlink to {real}, outside the memory folders; it was neither read "
            "nor written. Replace the link by a regular file (or link the whole folder)."
        )

    def _refuse_outside_link(self, target: Target) -> None:
        problem = self.link_problem(target)
        if problem is not None:
            raise MarkdownUnreadable(problem)

    def _read_once(self, target: Target) -> bytes | None:
        path = self.path_for(target)
        self._refuse_outside_link(target)
        try:
            with path.open("rb") as file:
                data = file.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise StorageFailed.from_os_error("read", path, exc) from exc
        if len(data) > MAX_FILE_BYTES:
            raise MarkdownTooLarge(
                f"{path} is larger than {MAX_FILE_BYTES // 2**20} MiB, more than a memory file "
                "may hold; it was left untouched and not read, and no change to it was written "
                "(the other memory files keep working). Split or shorten it by hand."
            )
        return data

    def _writable(self, target: Target) -> tuple[Path, Path]:
        """The file of `target` and its sidecar, checked before a write replaces them: a
        symlink out of the memory folders and a read-only file (chmod 0444, ADR 0023) are
        refused with StorageFailed, nothing written; the temp files a killed writer left
        beside them are removed."""
        path = self.path_for(target)
        problem = self.link_problem(target)
        if problem is not None:
            raise StorageFailed(problem, path=path, errno=errno.ELOOP)
        if read_only_file(path):
            raise StorageFailed(
                f"{path} is read-only; it was left as it is", path=path, errno=errno.EACCES
            )
        side = self.sidecar_for(target)
        self._remove_stale_temps(path, side)
        return path, side

    def write(self, target: Target, data: bytes, *, expected: object = UNCHECKED) -> None:
        """Replace the file atomically and durably. Raises StorageFailed: then nothing was saved.

        Take `lock()` around the read-modify-write that produced `data`. A file without write
        permission (chmod 0444) is respected, never replaced (ADR 0023). With `expected` (the
        stamp when the file was read), a file a person saved meanwhile is left alone:
        `MarkdownChanged`, checked after the temp file is durable, just before the rename.
        """
        path, side = self._writable(target)

        def unchanged() -> None:
            if expected is not UNCHECKED and self.stamp(target) != expected:
                raise MarkdownChanged(f"{path} changed while it was being rendered")

        # the file as it was, held open: an editor that saves in place between the last check
        # and the rename writes into this inode, which the rename then orphans
        old = _open_for_rescue(path) if expected is not UNCHECKED else None
        from pi_hermes_memory.adapters.markdown.shared import split

        edit = self._edits.get(target)
        shared, sidecar = split(data, target, self._read_sidecar(target), edit)
        real, real_side = self._physical(path), self._physical(side)
        late: Exception | None = None
        try:
            # the folder is synced once, after the sidecar's rename (same folder): until then a
            # power loss may leave the previous render, which the next operation tells from a
            # hand edit by its sidecar and renders again (ADR 0085)
            atomic_write(
                path,
                shared,
                before_replace=unchanged,
                real=real,
                sync_directory=real.parent != real_side.parent,
            )
            late = self._rescue_late_save(target, path, old, expected)
        finally:
            if old is not None:
                os.close(old)
        self._recorded(target, edit)
        # after the file: a crash between the two leaves an older sidecar, and the file then
        # reads as an edit of that older version whose changes the journal already holds
        atomic_write(side, sidecar, real=real_side)
        if late is not None:
            raise late

    def append(
        self, target: Target, tail: bytes, rendered: str, *, expected: object = UNCHECKED
    ) -> tuple[str, int, object | None] | None:
        """Write the render that appends `tail`'s entries to the one on disk (ADR 0088), the
        same bytes `write` writes for it, without rendering or holding the old entries: the
        file and the sidecar are each copied into a temp file with the new blocks after them,
        then replaced atomically as `write` does (the file, then the sidecar; `expected`, the
        late-save rescue). `tail` is our render of the added entries alone under the new
        version line; `rendered` the sha256 of the render on disk (the ledger's).

        Returns (the sha256 of the new render, its size, the file's `stamp` as written, ADR
        0100: None unless the file on the path is still the inode we wrote, with the size and
        mtime it had before its rename), or None, with nothing written, when
        the files are not the render `rendered` with its sidecar history and a version line,
        or the tail does not follow it (then `write` the full render). Raises as `write`."""
        from pi_hermes_memory.adapters.markdown.shared import extend, sidecar_header

        path, side = self._writable(target)
        real, real_side = self._physical(path), self._physical(side)

        def unchanged() -> None:
            if expected is not UNCHECKED and self.stamp(target) != expected:
                raise MarkdownChanged(f"{path} changed while it was being rendered")

        old = _open_for_rescue(path) if expected is not UNCHECKED else None
        try:
            with contextlib.ExitStack() as files:
                try:
                    shared_in = files.enter_context(real.open("rb"))
                    side_in = files.enter_context(real_side.open("rb"))
                except FileNotFoundError:
                    return None
                except OSError as exc:
                    raise StorageFailed.from_os_error("read", path, exc) from exc
                header = side_in.readline() + side_in.readline()
                old_line = side_in.readline()
                plan = extend(header, old_line, tail, target, self._edits.get(target))
                if plan is None:
                    return None
                shared_hash: Any = None
                # the old bytes are not what the append was planned on: render in full
                refused: list[str] = []
                known_file, known_side = self._hashed.get(target, (None, None))

                def fill_shared(fd: int) -> None:
                    nonlocal shared_hash, known_file
                    shared_hash, size, last, whole = _copy_known(shared_in, fd, b"", known_file)
                    if not size or last != b"\n" or shared_hash.hexdigest() != plan.old_sha:
                        refused.append("file")
                        return
                    write_all(fd, plan.shared_tail)
                    shared_hash.update(plan.shared_tail)
                    known_file = _remembered(b"", whole, plan.shared_tail, shared_hash)

                new_hash = hashlib.sha256(plan.line)
                new_size = 0

                def fill_side(fd: int) -> None:
                    nonlocal new_size, known_side
                    write_all(fd, sidecar_header(shared_hash.hexdigest(), plan.listing))
                    write_all(fd, plan.line)
                    old_hash, size, last, whole = _copy_known(
                        side_in, fd, old_line, known_side, new_hash
                    )
                    # an old render without entries is its version line alone: the tail
                    # then starts the body, with no separator (render it in full)
                    if not size or last != b"\n" or old_hash.hexdigest() != rendered:
                        refused.append("sidecar")
                        return
                    write_all(fd, plan.full_tail)
                    new_hash.update(plan.full_tail)
                    new_size = len(plan.line) + size + len(plan.full_tail)
                    known_side = _remembered(plan.line, whole, plan.full_tail, new_hash)

                try:
                    tmp = write_temp(real, fill_shared)
                finally:
                    # facts about bytes, not files: kept whatever happens to the write
                    self._hashed[target] = (known_file, known_side)
                if refused:
                    discard_temp(tmp)
                    return None
                try:
                    tmp_side = write_temp(real_side, fill_side)
                except BaseException:
                    discard_temp(tmp)
                    raise
                finally:
                    self._hashed[target] = (known_file, known_side)
                if refused:
                    discard_temp(tmp)
                    discard_temp(tmp_side)
                    return None
            edit = self._edits.get(target)
            try:
                ours = _identity(os.stat(tmp))
                replace_temp(
                    tmp,
                    real,
                    before_replace=unchanged,
                    sync_directory=real.parent != real_side.parent,
                )
            except BaseException:
                discard_temp(tmp_side)
                raise
            late = self._rescue_late_save(target, path, old, expected)
        finally:
            if old is not None:
                os.close(old)
        self._recorded(target, edit)
        replace_temp(tmp_side, real_side)
        if late is not None:
            raise late
        # a rename changes only the ctime: the same inode, size and mtime after it (and after
        # the sidecar's) is the file we wrote, so its stamp proves our render until it changes
        stamp = self.stamp(target)
        written = stamp if isinstance(stamp, tuple) and _identity_of(stamp) == ours else None
        return new_hash.hexdigest(), new_size, written

    def _recorded(self, target: Target, edit: tuple[int, list[str]] | None) -> None:
        """The hand edit `edit` is in the sidecar being written: forget it (unless a read
        found a newer one meanwhile)."""
        if self._edits.get(target) is edit:
            self._edits.pop(target, None)

    def _rescue_late_save(
        self, target: Target, path: Path, old: int | None, expected: object
    ) -> Exception | None:
        """After our render was renamed onto `path`: a person's in-place save that landed in
        the replaced inode `old` after the last check (the few instructions between
        `unchanged()` and the rename) is put back as the file, so the next operation imports
        it as a hand edit; our render stays in the journal.

        Answers, not raises, `MarkdownChanged` when it did (the file is then not our render),
        or the error of the rescue itself: the render was on the path, if only for a moment,
        so a person may have loaded it. The caller writes its sidecar all the same, so the
        render history holds that version (ADR 0115), then raises the answer."""
        if old is None:
            return None
        try:
            st = os.fstat(old)
            if not isinstance(expected, tuple) or (st.st_mtime_ns, st.st_size) == expected[:2]:
                return None
            rescued = _settled_bytes(old)
            ours = self.stamp(target)

            def still_ours() -> None:
                if self.stamp(target) != ours:
                    raise MarkdownChanged(f"{path} was saved again meanwhile")

            with contextlib.suppress(MarkdownChanged):
                atomic_write(path, rescued, before_replace=still_ours)
        except Exception as exc:  # the rescue's own read or write failing
            return exc
        return MarkdownChanged(f"{path} was saved by a person during the render; kept")

    def _remove_stale_temps(self, *paths: Path) -> None:
        """Delete the temp files a killed writer left next to `path` (`.MEMORY.md.x.tmp`).
        Called under the store lock: every writer of these files (this store's, another agent
        root's on the same memoryDir, the legacy migration) holds it while its temp file
        exists, so each one found is a dead writer's. Only our naming (`.NAME.` + 8 mkstemp
        characters + `.tmp`) is touched. Best effort: a leftover is harmless."""
        prefixes = tuple(f".{path.name}." for path in paths)
        for stale in stale_temp_files(paths[0].parent, older_than_s=STALE_TEMP_AGE_S):
            if stale.name.startswith(prefixes):
                with contextlib.suppress(OSError):
                    stale.unlink()

    @property
    def lock_path(self) -> Path:
        return self.memory_dir / LOCK_FILE_NAME

    def lock(self, timeout: float = 30.0) -> FileLock:
        """The store-wide lock (one for all files, so multi-file changes need no lock ordering)."""
        return FileLock(self.lock_path, timeout=timeout)
