"""Many hosts, one journal (issue 16): real processes, each a host with its own agent root and
Markdown files, adding at once through `Memory.add` against one PostgreSQL database."""

from __future__ import annotations

from pathlib import Path

from tests.bench.postgres import bench_hosts


def test_concurrent_hosts_lose_nothing_and_their_replicas_converge(
    pg_dsn: str, tmp_path: Path
) -> None:
    figures = bench_hosts(pg_dsn, hosts=4, writes=12, work=tmp_path)
    assert figures["statuses"] == {"added": 48} and figures["acknowledged"] == 48
    assert figures["lost"] == 0 and figures["duplicated"] == 0 and figures["entries"] == 48
    assert figures["replicas_converged"]
