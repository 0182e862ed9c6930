"""Proofs that a Markdown replica is unchanged, kept in a cache folder outside the store (ADR 0089).

Every open proves each Markdown replica is what the render ledger recorded before answering
(ADR 0038): it reads the file and its sidecar and hashes them. At 100,000 entries that is a
14 MB read and sha256 per process, and the resident size of holding it: what a hook or a CLI
call pays every time although nothing changed.

A proof records, for one replica, the full stamp of its file and of its sidecar (size,
mtime_ns, ctime_ns, inode and a BLAKE2b digest of the first 4 KiB and the last 64 KiB, as the
damage-check stamp of ADR 0086) and the sha256 of the bytes `read()` gave for that stamp. A
later process whose files carry the same stamps takes the recorded digest instead of reading
them; any other stamp means the read and the hash, exactly as before. ctime is set by the
kernel on every change and cannot be set back by a program (`os.utime` restores mtime only),
an inode changes with every atomic replace, and the sampled ends catch a same-size write on a
file system with coarse times.

Racy-git rule: a file whose mtime or ctime is within `RACY_NS` (100 ms) of the moment the stamp
was taken is never recorded: a write within the same timestamp tick as the stamp could leave
every stat field as it was. Such a file is simply read again next time.

The records live in `<cache>/replicas/<blake2b of the replica's physical path>.json`, where
`<cache>` is `$PI_HERMES_MEMORY_CACHE_DIR`, else `$XDG_CACHE_HOME/pi-hermes-memory`, else
`~/.cache/pi-hermes-memory` (resolved by bootstrap): never in the store's folder, so a search
or a dry run leaves the store byte for byte as it found it. A record is a hint that can only
make a read cheaper: missing, stale, unreadable or unwritable, the replica is read as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from pi_hermes_memory.adapters.markdown.store import MarkdownFiles
from pi_hermes_memory.domain.memory.streams import target_of

__all__ = ["RACY_NS", "MarkdownProofs", "cache_dir"]

#: a file changed this close to its stamp is never recorded as proven (timestamp granularity
#: of common file systems is 1-10 ms; 100 ms leaves room for a coarse one)
RACY_NS = 100_000_000
_HEAD = 4096
_TAIL = 64 * 1024

#: (size, mtime_ns, ctime_ns, inode, digest of the sampled ends), or None: no such file
_FileStamp = tuple[int, int, int, int, str]
Token = tuple[_FileStamp | None, _FileStamp | None]


def cache_dir(environ: Mapping[str, str]) -> Path | None:
    """The cache folder named by the environment, or None (no HOME either: no proofs)."""
    named = environ.get("PI_HERMES_MEMORY_CACHE_DIR")
    if named:
        return Path(named)
    xdg = environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "pi-hermes-memory"
    home = environ.get("HOME")
    if home:
        return Path(home) / ".cache" / "pi-hermes-memory"
    return None


def _file(path: Path) -> _FileStamp | None:
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            digest = hashlib.blake2b(f.read(_HEAD), digest_size=16)
            if st.st_size > _HEAD:
                f.seek(max(_HEAD, st.st_size - _TAIL))
                digest.update(f.read(_TAIL))
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, digest.hexdigest())


class MarkdownProofs:
    """`ReplicaProofs` for the memory documents' Markdown files (`MarkdownFiles`)."""

    def __init__(
        self, files: MarkdownFiles, folder: Path, *, now_ns: Callable[[], int] = time.time_ns
    ) -> None:
        self.files = files
        self._files = files
        self._folder = folder / "replicas"
        self._now_ns = now_ns

    def token(self, stream: str) -> object | None:
        """The full stamp of the replica's file and sidecar; None when the file is missing."""
        target = target_of(stream)
        main = _file(self._files.path_for(target))
        if main is None:
            return None
        return (main, _file(self._files.sidecar_for(target)))

    def proven(self, stream: str) -> str | None:
        """The digest recorded for the replica's current stamp, or None."""
        token = self.token(stream)
        if token is None:
            return None
        try:
            data = json.loads(self._record(stream).read_text(encoding="utf-8"))
            recorded = (_stamp(data["file"]), _stamp(data["sidecar"]))
            digest = data["digest"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if recorded != token or not isinstance(digest, str):
            return None
        return digest

    def prove(self, stream: str, token: object, digest: str) -> None:
        """Record that the replica read as `digest` while it had `token` (taken before the
        read): only when the stamp is still `token` now and older than the racy window."""
        if token is None or self.token(stream) != token:
            return  # changed while it was read (or missing): nothing is proven
        assert isinstance(token, tuple)
        horizon = self._now_ns() - RACY_NS
        for part in token:
            if part is not None and (part[1] > horizon or part[2] > horizon):
                return  # changed too recently: a write in the same tick would not show
        body = json.dumps(
            {
                "replica": self._files.replica(target_of(stream)),
                "file": list(token[0]),
                "sidecar": None if token[1] is None else list(token[1]),
                "digest": digest,
            }
        )
        target = self._record(stream)
        temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, body.encode("utf-8"))
            finally:
                os.close(fd)
            os.replace(temp, target)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink()

    def _record(self, stream: str) -> Path:
        replica = self._files.replica(target_of(stream))
        key = hashlib.blake2b(replica.encode("utf-8", "surrogateescape"), digest_size=16)
        return self._folder / f"{key.hexdigest()}.json"


def _stamp(value: object) -> _FileStamp | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 5 or not isinstance(value[4], str):
        raise ValueError("not a file stamp")
    size, mtime, ctime, inode = (int(v) for v in value[:4])
    return size, mtime, ctime, inode, value[4]
