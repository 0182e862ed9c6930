"""Knowledge chunks are scanned and their secrets redacted; some folders are never roots; the
index has a budget in the config (ADR 0063). Secrets are built at run time
(`tests.support.secret_documents`): the repository holds no literal key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pi_hermes_memory.config.settings import parse_config
from pi_hermes_memory.domain.knowledge.chunks import (
    DEFAULT_INDEX_BYTES,
    DEFAULT_INDEX_FILES,
    MARKDOWN,
    Chunk,
    chunk_text,
)
from pi_hermes_memory.domain.knowledge.redaction import (
    marker,
    redact_chunk,
    redact_private_keys,
    redact_text,
)
from pi_hermes_memory.domain.knowledge.roots import refused_root
from pi_hermes_memory.domain.scanning.scanner import ScanCategory, scan
from pi_hermes_memory.domain.scanning.spans import secret_spans

from tests.support.secret_documents import INJECTION, secrets, token


def _no_secret(text: str) -> bool:
    return not any(f.category is ScanCategory.SECRET for f in scan(text).findings)


def test_every_secret_is_replaced_and_counted_and_lines_stay() -> None:
    s = secrets()
    text = (
        f"token {s.github} and again {s.github}\n"
        f"aws_access_key_id = {s.aws_key_id}\naws_secret_access_key = {s.aws_secret}\n"
        f"The staging database password: {s.password}\n"
    )
    done = redact_text(text)
    assert done.secrets == 5  # the token twice: every occurrence, not the first only
    for secret in s.all():
        assert secret not in done.text
    assert marker("github-pat") in done.text and "token " in done.text
    assert done.text.count("\n") == text.count("\n")
    assert _no_secret(done.text)


def test_a_clean_chunk_is_returned_unchanged() -> None:
    chunk = Chunk(start_line=1, end_line=1, heading="Runbook", text="Restart the pager.\n")
    assert redact_chunk(chunk) is chunk


def test_a_secret_in_a_heading_is_redacted_too() -> None:
    s = secrets("heading")
    [chunk] = chunk_text(f"# Token {s.github}\n\nUse it for CI.\n", MARKDOWN)
    done = redact_chunk(chunk)
    assert s.github not in done.text and s.github not in (done.heading or "")
    assert done.redacted == 2 and done.heading == f"Token {marker('github-pat')}"


def test_injection_is_kept_at_index_time() -> None:
    [chunk] = chunk_text(f"Copied from a page: {INJECTION}\n", MARKDOWN)
    assert redact_chunk(chunk) is chunk  # flagged when a search returns it (e2e test)


def test_a_private_key_cut_by_a_chunk_boundary_is_redacted_on_both_sides() -> None:
    body = "\n".join(token(64, seed=f"pem{i}") for i in range(40))
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\n"
    # cut alone, the first piece has the BEGIN line and the last the END line
    chunks = chunk_text(text, MARKDOWN, max_chars=1200)
    assert len(chunks) >= 3
    done = [redact_chunk(c) for c in chunks]
    assert done[0].redacted and done[-1].redacted
    # the middle of a key matches no rule: the file is redacted before it is cut
    whole = redact_private_keys(f"# Keys\n\nops key:\n{text}after\n")
    assert whole.count("\n") == text.count("\n") + 4 and "after" in whole
    pieces = [redact_chunk(c) for c in chunk_text(whole, MARKDOWN, max_chars=1200)]
    assert sum(c.redacted for c in pieces) == 1
    for line in body.splitlines():
        assert line not in whole and all(line not in c.text for c in pieces)
    spans = secret_spans("-----END RSA PRIVATE KEY-----\nafter")
    assert [(s.start, s.rule_id) for s in spans] == [(0, "private_key_tail")]


def test_a_chunk_longer_than_the_scanner_window_is_scanned_whole() -> None:
    s = secrets("long")
    text = ("filler line of plain words\n" * 3000) + f"token {s.github}\n"
    assert len(text) > 70_000
    done = redact_text(text)
    assert s.github not in done.text and done.secrets == 1


HOME = "/home/me"
AGENT = "/home/me/.pi/agent"
MEMORY = "/home/me/.pi/agent/pi-hermes-memory"


@pytest.mark.parametrize(
    ("path", "real", "rule"),
    [
        ("/", "/", "filesystem_root"),
        (HOME, HOME, "home_directory"),
        ("/home", "/home", "holds_home_directory"),
        (AGENT, AGENT, "agent_root"),
        (MEMORY, MEMORY, "memory_folder"),
        (MEMORY + "/skills", MEMORY + "/skills", "memory_folder"),
        ("/etc", "/etc", "system_folder"),
        ("/etc/nginx", "/etc/nginx", "system_folder"),
        ("/usr", "/usr", "system_folder"),
        ("/var", "/var", "system_folder"),
        ("/proc/self", "/proc/self", "system_folder"),
        ("/sys", "/sys", "system_folder"),
        ("/dev", "/dev", "system_folder"),
        ("/lib64", "/lib64", "system_folder"),
        ("/boot", "/boot", "system_folder"),
        ("/root", "/root", "system_folder"),
        ("/System", "/System", "system_folder"),
        ("/Library", "/Library", "system_folder"),
        ("/private/etc/ssh", "/private/etc/ssh", "system_folder"),
        ("/home/me/../..", "/", "filesystem_root"),
        ("/home/me/link", "/etc", "system_folder"),
        ("/home/me/up", "/home/me", "home_directory"),
    ],
)
def test_refused_roots_name_their_rule(path: str, real: str, rule: str) -> None:
    found = refused_root(path, real, home=HOME, agent_root=AGENT, state_dirs=(MEMORY,))
    assert found is not None and found.rule == rule
    if real != path and rule != "filesystem_root":
        assert "through a symlink" in found.reason


@pytest.mark.parametrize(
    "path",
    [
        "/home/me/notes",
        AGENT + "/docs",  # a documents folder inside the agent root (the walk skips memory)
        "/usr/share/doc",
        "/var/www/docs",
        "/srv/wiki",
        "/tmp/pytest-of-me/kb",
        "/library",  # /lib, /lib32, /lib64, /libx32, /libexec only
    ],
)
def test_document_folders_are_allowed(path: str) -> None:
    assert refused_root(path, path, home=HOME, agent_root=AGENT, state_dirs=(MEMORY,)) is None


def test_root_is_refused_unless_it_is_home() -> None:
    assert refused_root("/root/notes", "/root/notes", home="/root", agent_root=None) is None
    refused = refused_root("/root/notes", "/root/notes", home=HOME, agent_root=None)
    assert refused is not None and refused.rule == "system_folder"


def test_the_budget_is_configurable_and_bounded() -> None:
    def knowledge(raw: object) -> tuple[int, int, list[str]]:
        config, warnings = parse_config(
            raw, agent_root=Path("/agent"), cwd=Path("/w"), environ={}, physical=lambda p: p
        )
        k = config.knowledge
        return k.max_index_files, k.max_index_bytes, [w.field for w in warnings]

    assert knowledge({}) == (DEFAULT_INDEX_FILES, DEFAULT_INDEX_BYTES, [])
    assert knowledge({"knowledge": {"maxIndexFiles": 5, "maxIndexBytes": 1000}}) == (5, 1000, [])
    assert knowledge({"knowledge": {"maxIndexFiles": 0}})[2] == ["knowledge.maxIndexFiles"]
