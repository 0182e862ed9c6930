"""A throwaway PostgreSQL cluster for the tests, the benchmark and `make pg` (issue 16).

The server binaries come from the OS packages (`initdb`, `pg_ctl`); the cluster lives in a
temporary folder and listens only on a Unix socket there (no TCP port). initdb refuses to
run as root, so as root the cluster runs as `nobody` (its folder chowned to it).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

#: set to a DSN to use a running server instead of starting one
DSN_ENV = "PI_HERMES_PG_DSN"


class ClusterUnavailable(RuntimeError):
    """No PostgreSQL server binaries, or the cluster did not start."""


def server_bin() -> Path:
    """The folder of initdb/pg_ctl: $PG_BIN (only it, when set), else the newest
    /usr/lib/postgresql/*/bin, else the folder of `initdb` on PATH."""
    configured = os.environ.get("PG_BIN")
    if configured:
        if (Path(configured) / "initdb").exists() and (Path(configured) / "pg_ctl").exists():
            return Path(configured)
        raise ClusterUnavailable(f"PG_BIN={configured} holds no initdb and pg_ctl")
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
    )[::-1]
    for folder in candidates:
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    raise ClusterUnavailable("no PostgreSQL server binaries (initdb, pg_ctl) were found")


class Cluster:
    """One started cluster; `dsn` reaches its `postgres` database over the socket."""

    def __init__(self, folder: Path, bin_dir: Path, user: str | None) -> None:
        self.folder, self.bin_dir, self.user = folder, bin_dir, user
        self.data = folder / "data"
        self.socket_dir = folder

    def dsn(self, dbname: str = "postgres") -> str:
        return f"host={self.socket_dir} port=5432 user=postgres dbname={dbname}"

    def _run(self, argv: Sequence[str]) -> None:
        command = list(argv)
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise ClusterUnavailable(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[-800:]}")

    def start(self, *, durable: bool) -> None:
        self._run(
            [
                str(self.bin_dir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ]
        )
        options = [
            "-c listen_addresses=''",
            f"-c unix_socket_directories={self.socket_dir}",
            "-c max_connections=200",
            "-c shared_buffers=128MB",
        ]
        if not durable:  # the tests: nothing survives the run anyway
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        self._options = options
        self.resume()

    def resume(self) -> None:
        """Start the server of the existing data folder again (after `pause`)."""
        self._run(
            [
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.folder / "server.log"),
                "-w",
                "-t",
                "60",
                "-o",
                " ".join(self._options),
                "start",
            ]
        )

    def pause(self) -> None:
        """Stop the server (fast shutdown: every connection is dropped), keeping its data."""
        self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop"])

    def stop(self) -> None:
        with contextlib.suppress(ClusterUnavailable, subprocess.TimeoutExpired, OSError):
            self._run([str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "stop"])
        shutil.rmtree(self.folder, ignore_errors=True)


def start_cluster(*, durable: bool = False) -> Cluster:
    """Start a fresh cluster in a new temporary folder; ClusterUnavailable when it cannot."""
    bin_dir = server_bin()
    folder = Path(tempfile.mkdtemp(prefix="phm-pg-"))
    user = None
    if os.geteuid() == 0:  # initdb refuses root: the cluster runs as nobody
        user = "nobody"
        nobody = pwd.getpwnam(user)
        os.chown(folder, nobody.pw_uid, nobody.pw_gid)
    cluster = Cluster(folder, bin_dir, user)
    try:
        cluster.start(durable=durable)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@contextlib.contextmanager
def running_cluster(*, durable: bool = False) -> Iterator[Cluster]:
    cluster = start_cluster(durable=durable)
    try:
        yield cluster
    finally:
        cluster.stop()


def create_database(admin_dsn: str, name: str, template: str = "template1") -> None:
    """CREATE DATABASE `name` (a plain identifier) from `template`."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template)
            )
        )


def with_dbname(dsn: str, name: str) -> str:
    """`dsn` (key=value form) pointing at database `name`."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    params = conninfo_to_dict(dsn)
    params["dbname"] = name
    return make_conninfo(**{k: str(v) for k, v in params.items() if v is not None})


def main() -> None:
    """`make pg`: start a cluster that outlives this command and print its DSN line."""
    cluster = start_cluster(durable=True)
    print(f"export {DSN_ENV}='{cluster.dsn()}'")
    runner = f"runuser -u {cluster.user} -- " if cluster.user else ""
    print(f"# stop it: {runner}{cluster.bin_dir}/pg_ctl -D {cluster.data} stop", flush=True)


if __name__ == "__main__":
    main()
