"""The `pi-hermes-memory` command, run as a real process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "agent"


def cli(
    root: Path, *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    return subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or root.parent,
        input=stdin,
        timeout=60,
    )


def test_add_then_list(root: Path) -> None:
    added = cli(root, "add", "The test command is make test")
    assert added.returncode == 0, added.stderr
    assert "Saved" in added.stdout
    listed = cli(root, "list")
    assert listed.returncode == 0
    assert "[memory] The test command is make test" in listed.stdout
    # the file in the TypeScript extension's spelling, the version line in the sidecar (ADR 0077)
    folder = root / "pi-hermes-memory"
    assert (folder / "MEMORY.md").read_text().startswith("The test command is make test <!--")
    meta = (folder / ".MEMORY.md.meta").read_text().split("\n")
    assert meta[2].startswith("<!-- pi-hermes-memory: memory v1, store ")


def test_tool_call_prints_json_and_sets_the_exit_status(root: Path) -> None:
    ok = cli(
        root,
        "tool",
        "memory",
        json.dumps({"action": "add", "target": "user", "content": "Prefers tabs"}),
    )
    assert ok.returncode == 0
    assert json.loads(ok.stdout)["status"] == "added"
    again = cli(
        root,
        "tool",
        "memory",
        '{"action": "remove", "target": "user", "old_text": "nothing like this"}',
    )
    assert again.returncode == 1
    assert json.loads(again.stdout) == {
        "success": False,
        "status": "not_found",
        "target": "user",
        "action": "remove",
        "message": "No user entry contains old_text; nothing was changed.",
    }
    bad_args = cli(root, "tool", "memory", '{"action": "add"}')
    assert bad_args.returncode == 1
    assert json.loads(bad_args.stdout)["status"] == "invalid_arguments"


def test_tool_arguments_from_stdin(root: Path) -> None:
    result = cli(
        root,
        "tool",
        "memory",
        "-",
        stdin='{"action": "add", "target": "memory", "content": "from stdin"}',
    )
    assert result.returncode == 0 and json.loads(result.stdout)["success"] is True


@pytest.mark.parametrize(
    "args",
    [
        ("tool", "memory", "{not json"),
        ("frobnicate",),
        ("add",),
        ("add", "x", "--target", "nowhere"),
    ],
)
def test_usage_errors_exit_2(root: Path, args: tuple[str, ...]) -> None:
    result = cli(root, *args)
    assert result.returncode == 2
    assert result.stderr


def test_project_comes_from_the_cwd_or_the_flag(root: Path, tmp_path: Path) -> None:
    work = tmp_path / "shop-api"
    work.mkdir()
    assert cli(root, "add", "Uses FastAPI", "--target", "project", cwd=work).returncode == 0
    assert (
        cli(root, "add", "Uses Django", "--target", "project", "--project", "blog").returncode == 0
    )
    shop = cli(root, "list", "--target", "project", "--json", cwd=work)
    assert [e["text"] for e in json.loads(shop.stdout)] == ["Uses FastAPI"]
    text = (root / "projects-memory" / "MEMORY.md").read_text()
    assert "project64=c2hvcC1hcGk -->" in text and "project64=YmxvZw -->" in text


def test_invalid_config_warns_and_uses_defaults(root: Path) -> None:
    root.mkdir(parents=True)
    (root / "hermes-memory-config.json").write_text("{ this is not json")
    result = cli(root, "add", "still works with defaults")
    assert result.returncode == 0
    assert "warning" in result.stderr


def test_foreign_database_is_a_clear_error(root: Path) -> None:
    import apsw

    db = root / "pi-hermes-memory" / "sessions.db"
    db.parent.mkdir(parents=True)
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE foreign_stuff (x)")
    conn.close()
    result = cli(root, "add", "anything")
    assert result.returncode == 1
    assert "not a pi-hermes-memory database" in result.stderr
    assert "Traceback" not in result.stderr


def test_history_listing(root: Path) -> None:
    cli(root, "add", "Node 18 is the runtime")
    cli(
        root,
        "tool",
        "memory",
        json.dumps(
            {
                "action": "replace",
                "target": "memory",
                "old_text": "Node 18",
                "content": "Node 22 is the runtime",
            }
        ),
    )
    out = json.loads(cli(root, "list", "--history", "--json").stdout)
    assert [(e["text"], e["superseded_by"] is not None) for e in out] == [
        ("Node 22 is the runtime", False),
        ("Node 18 is the runtime", True),
    ]


def test_promote_demote_switch_project_and_insights(root: Path) -> None:
    assert (
        cli(
            root, "add", "Checkout uses Stripe Elements", "--target", "project", "--project", "shop"
        ).returncode
        == 0
    )
    up = cli(root, "promote", "Stripe Elements", "--project", "shop", "--json")
    assert up.returncode == 0 and json.loads(up.stdout)["status"] == "promoted"
    missing = cli(root, "demote", "nothing like it", "--project", "shop")
    assert missing.returncode == 1
    down = cli(root, "demote", "Stripe", "--project", "shop")
    assert down.returncode == 0 and "project memory" in down.stdout
    overview = json.loads(cli(root, "switch-project", "--project", "shop", "--json").stdout)
    assert overview["current"] == "shop"
    assert overview["projects"] == [{"project": "shop", "project_entries": 1, "failures": 0}]
    human = cli(root, "insights", "--project", "shop")
    assert human.returncode == 0 and "project: 1 active" in human.stdout
    insights = json.loads(cli(root, "insights", "--project", "shop", "--json").stdout)
    assert {t["target"] for t in insights["targets"]} == {"memory", "user", "project", "failure"}


def test_agent_scopes_from_the_cli(root: Path) -> None:
    assert (
        cli(root, "add", "Coder note", "--agent", "coder", "--scope", "agent:coder").returncode == 0
    )
    assert "[memory agent:coder] Coder note" in cli(root, "list", "--agent", "coder").stdout
    assert "Coder note" not in cli(root, "list", "--agent", "reviewer").stdout
    denied = cli(root, "add", "x y z", "--agent", "reviewer", "--scope", "agent:coder")
    assert denied.returncode == 1 and "no access" in denied.stdout


def test_common_options_work_before_and_after_the_command(root: Path) -> None:
    assert (
        cli(root, "add", "Uses Poetry", "--target", "project", "--project", "api").returncode == 0
    )
    before = cli(root, "--json", "--project", "api", "list", "--target", "project")
    after = cli(root, "list", "--target", "project", "--project", "api", "--json")
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert [e["text"] for e in json.loads(after.stdout)] == ["Uses Poetry"]


def test_version_and_a_bad_project_name_are_one_line_each(root: Path) -> None:
    from pi_hermes_memory import __version__

    shown = cli(root, "--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"pi-hermes-memory {__version__}"
    bad = cli(root, "--project", "../etc", "list")
    assert bad.returncode == 2, bad.stderr
    assert "invalid project name" in bad.stderr and "Traceback" not in bad.stderr


def _wait_until_reading_stdin(pid: int, timeout_s: float = 30.0) -> None:
    """Until the process blocks in read(0, ...) (Linux: /proc/PID/syscall), so the signal
    reaches the command, not an interpreter still starting; elsewhere, a fixed second."""
    read_syscall = {"x86_64": "0", "aarch64": "63"}.get(os.uname().machine)
    where = Path(f"/proc/{pid}/syscall")
    if read_syscall is None or not where.exists():
        time.sleep(1.0)
        return
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        fields = where.read_text().split()
        if fields[:2] == [read_syscall, "0x0"]:
            return
        time.sleep(0.02)
    raise AssertionError("the command never waited on stdin")


def test_ctrl_c_exits_130_quietly(root: Path) -> None:
    """SIGINT while the command waits for its JSON on stdin."""
    import signal

    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root), "HOME": str(root.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "tool", "memory", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        _wait_until_reading_stdin(proc.pid)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


def test_add_json_has_the_memory_tool_shape(root: Path) -> None:
    added = json.loads(cli(root, "add", "Uses uv for envs", "--json").stdout)
    tool = json.loads(
        cli(
            root,
            "tool",
            "memory",
            json.dumps({"action": "add", "target": "memory", "content": "Deploys need VPN"}),
        ).stdout
    )
    assert set(added) == set(tool)
    assert added["status"] == tool["status"] == "added"


def test_deeply_nested_arguments_are_a_usage_error(root: Path) -> None:
    done = cli(root, "tool", "memory", "-", stdin="[" * 100_000 + "]" * 100_000)
    assert done.returncode == 2
    assert "nested too deeply" in done.stderr and "Traceback" not in done.stderr


def test_reembed_json_reports_a_failure_as_json(root: Path) -> None:
    done = cli(root, "reembed", "--json")
    assert done.returncode == 1
    assert json.loads(done.stdout)["success"] is False


def test_live_indexing_a_missing_file_warns(root: Path) -> None:
    done = cli(root, "index-sessions", "--file", str(root.parent / "missing.jsonl"))
    assert done.returncode == 0
    assert "does not exist" in done.stderr


def test_library_warnings_are_plain_lines_on_stderr(root: Path) -> None:
    """Library events reach the CLI's stderr as `pi-hermes-memory: warning: ...` through
    `logging`, with no colour codes, also when stderr is a file (issue 10 §6)."""
    root.mkdir(parents=True)
    (root / "hermes-memory-config.json").write_text(
        json.dumps(
            {
                "embedding": {
                    "provider": "openai-compatible",
                    "baseUrl": "http://127.0.0.1:9/v1",  # discard port: nothing listens
                    "model": "m",
                    "apiKeyEnv": "PHM_TEST_LOG_KEY",
                    "timeoutMs": 500,
                }
            }
        )
    )
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(root),
        "HOME": str(root.parent),
        "PHM_TEST_LOG_KEY": "sk-test-not-a-real-key",
        "FORCE_COLOR": "1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "pi_hermes_memory.adapters.cli.app", "add", "Deploys need the VPN"],
        capture_output=True,
        text=True,
        env=env,
        cwd=root.parent,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "pi-hermes-memory: warning: embedding.failed reason=transport" in done.stderr
    assert "\x1b" not in done.stderr and "sk-test" not in done.stderr
