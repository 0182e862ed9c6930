"""A folder of files as one byte string: the replica of a multi-file document (a skill).

The write pipeline hashes and compares one byte string per stream; a skill is a SKILL.md plus
support files. `pack` lays the files out in path order as `<path>\\n<size>\\n<bytes>\\n`, so
equal folders pack to equal bytes and `unpack(pack(f)) == f`. Paths never hold a newline (the
support-file rules refuse control characters), which keeps the layout unambiguous.
"""

from __future__ import annotations

from collections.abc import Mapping

from pi_hermes_memory.domain.errors import InvariantViolation

__all__ = ["pack", "unpack"]


def pack(files: Mapping[str, bytes]) -> bytes:
    """The files as one byte string, in path order; no files is `b""`."""
    parts: list[bytes] = []
    for path in sorted(files):
        if not path or "\n" in path:
            raise InvariantViolation(f"cannot pack the file name {path!r}")
        data = files[path]
        parts.append(b"%s\n%d\n%s\n" % (path.encode("utf-8"), len(data), data))
    return b"".join(parts)


def unpack(data: bytes) -> dict[str, bytes]:
    """The files of a `pack`ed byte string; raises `InvariantViolation` for anything else."""
    files: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        size_end = data.find(b"\n", end + 1) if end >= 0 else -1
        if end < 0 or size_end < 0:
            raise InvariantViolation("a packed folder is cut short")
        path = data[at:end].decode("utf-8", "surrogateescape")
        size_text = data[end + 1 : size_end]
        if not size_text.isdigit():
            raise InvariantViolation("a packed folder has a bad size")
        size = int(size_text)
        start, stop = size_end + 1, size_end + 1 + size
        if stop >= len(data) + 1 or data[stop : stop + 1] != b"\n" or path in files:
            raise InvariantViolation("a packed folder is damaged")
        files[path] = data[start:stop]
        at = stop + 1
    return files
