"""Files a command is given to read (`import FILE`, `migrate FILE`, `interview --answers`,
`learn-skill --file`): one way to open them and one way to say why one cannot be used.

A file that cannot be read, or whose content is not what the command takes, is a usage error
(exit 2, as argparse's own), said in plain words: the path and what is wrong with it, never
Python's `[Errno 2] ...` text (ADR 0120)."""

from __future__ import annotations

import errno
from pathlib import Path

from pi_hermes_memory.errors import UnusableInput


def why(exc: OSError | UnicodeDecodeError) -> str:
    """Why a file could not be read, in plain words."""
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not UTF-8 text (byte {exc.start} cannot be decoded)"
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "it is a folder, not a file"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, NotADirectoryError):
        return "a part of its path is not a folder"
    if exc.errno == errno.ELOOP:
        return "its symbolic links loop"
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]


def cannot_read(path: str, exc: OSError | UnicodeDecodeError, what: str = "") -> UnusableInput:
    """The refusal of `path` (`what`: e.g. "the answers file ", before the path)."""
    return UnusableInput(f"cannot read {what}{path}: {why(exc)}")


def read_text(path: str, *, limit: int, what: str = "") -> str:
    """The whole of a UTF-8 text file of at most `limit` bytes."""
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(limit + 1)
        if len(data) > limit:
            raise UnusableInput(f"cannot read {what}{path}: it is larger than {limit:,} bytes")
        return data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise cannot_read(path, exc, what) from None
