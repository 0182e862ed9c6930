"""Which folders may never be knowledge roots (ADR 0063).

Indexing copies text out of a folder into `knowledge.db` and hands it to an agent, so a root
that holds far more than documents is refused, each by a named rule:

* `filesystem_root`: `/`;
* `home_directory`: the home directory itself, and `holds_home_directory`: a folder holding
  it (`/home`, `/Users`: every user's files) — name the folders inside home that hold
  documents instead;
* `agent_root`: the agent root itself, and `memory_folder`: the memory folders (which may
  lie elsewhere) and anything inside them: the library's own state (the walk never enters
  a memory folder either, `state_dir`);
* `system_folder`: a system folder itself (`/etc`, `/usr`, `/var`, `/bin`, `/sbin`,
  `/lib*`, `/boot`, `/opt`, `/srv`, `/tmp`, `/root` when it is not the home directory, on macOS
  `/System`, `/Library`, `/Applications`, `/private`, `/Volumes`…), and anything inside the
  ones that hold credentials or are no files at all (`/etc`, `/proc`, `/sys`, `/dev`, `/run`,
  `/boot`, `/root`, `/private/etc`, `/private/var/db`…). A folder below `/usr` or `/var` (say
  `/usr/share/doc`, `/var/www/docs`) stays allowed.

`refused_root` takes the folder as configured and as resolved (symlinks followed): a root that
resolves to a refused folder through a symlink is refused as well. Pure: paths in, a rule out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from typing import Final

import attrs

__all__ = ["RootRefusal", "refused_root"]

#: refused themselves; folders below them are allowed
_SYSTEM_EXACT: Final = frozenset(
    {
        "/usr", "/usr/local", "/var", "/bin", "/sbin", "/opt", "/srv", "/tmp", "/var/tmp",
        "/mnt", "/media", "/home", "/Users", "/System", "/Library", "/Applications",
        "/private", "/private/tmp", "/private/var", "/Volumes", "/cores", "/snap", "/nix",
        "/nix/store",
        "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/share", "/var/lib", "/var/log",
    }
)  # fmt: skip
#: refused with everything below them
_SYSTEM_TREES: Final = (
    "/etc", "/proc", "/sys", "/dev", "/run", "/boot", "/root", "/lost+found",
    "/private/etc", "/private/var/db", "/private/var/root", "/private/var/run",
    "/System/Volumes", "/var/run", "/var/db",
)  # fmt: skip


@attrs.frozen(kw_only=True)
class RootRefusal:
    """Why a folder is refused: `rule` (a stable name) and `reason` (a sentence for people,
    naming only the protected folder, never the configured value)."""

    rule: str
    reason: str


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


_LIB: Final = re.compile(r"/lib(?:32|64|x32|exec)?")


def _is_lib(path: str) -> bool:
    return _LIB.fullmatch(path) is not None


def _system(path: str, home: str | None) -> RootRefusal | None:
    for tree in _SYSTEM_TREES:
        if _inside(path, tree) and not (tree == "/root" and home == "/root"):
            where = "the system folder" if path == tree else "inside the system folder"
            return RootRefusal(
                rule="system_folder",
                reason=f"it is {where} {tree}, which holds system files and credentials",
            )
    if path in _SYSTEM_EXACT or _is_lib(path):
        return RootRefusal(
            rule="system_folder",
            reason=f"it is the system folder {path}; name a folder of documents below it",
        )
    return None


def _check(
    path: str, home: str | None, agent_root: str | None, state_dirs: Sequence[str]
) -> RootRefusal | None:
    if path == "/":
        return RootRefusal(rule="filesystem_root", reason="it is the file system root (/)")
    if agent_root and path == agent_root:
        return RootRefusal(
            rule="agent_root",
            reason=f"it is the agent root {agent_root}, which holds the library's own state "
            "(memory, sessions, configuration); a documents folder inside it is allowed",
        )
    for state in state_dirs:
        if state and _inside(path, state):
            return RootRefusal(
                rule="memory_folder",
                reason=f"it is {'' if path == state else 'inside '}the memory folder {state}",
            )
    if home and path == home:
        return RootRefusal(
            rule="home_directory",
            reason="it is the home directory itself; name the folders inside it that hold "
            "your documents (e.g. ~/notes)",
        )
    if home and _inside(home, path):
        return RootRefusal(
            rule="holds_home_directory",
            reason=f"it holds the home directory {home} (and other users' files)",
        )
    return _system(path, home)


def refused_root(
    configured: str,
    real: str,
    *,
    home: str | None,
    agent_root: str | None,
    state_dirs: Sequence[str] = (),
    real_home: str | None = None,
    real_agent_root: str | None = None,
    real_state_dirs: Sequence[str] = (),
) -> RootRefusal | None:
    """Why the folder `configured` (resolving to `real`) may not be a knowledge root, or None
    (see the module docstring). The protected folders come as configured and, in `real_*`,
    resolved; each form of the root is checked against both."""
    homes: list[str | None] = [*sorted({_norm(h) for h in (home, real_home) if h})]
    agents: list[str | None] = [*sorted({_norm(a) for a in (agent_root, real_agent_root) if a})]
    states = tuple({_norm(s) for s in (*state_dirs, *real_state_dirs) if s})
    paths = [_norm(configured)]
    if _norm(real) != paths[0]:
        paths.append(_norm(real))
    for index, path in enumerate(paths):
        for h in homes or [None]:
            for a in agents or [None]:
                found = _check(path, h, a, states)
                if found is not None:
                    if index:
                        return attrs.evolve(
                            found, reason=f"{found.reason} (it resolves there through a symlink)"
                        )
                    return found
    return None
