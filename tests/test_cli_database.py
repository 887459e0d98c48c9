"""Database URLs and connection failures at the command line: one line and a hint, exit 1,
never a traceback, never a password (issue 16, items 1 and 5)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.store.engine import redact
from tests.conftest import PG_ADMIN

SOCKET_DIR = Path("/var/run/postgresql")
PASSWORD = "p@ss-Secr3t"
ENCODED = "p%40ss-Secr3t"


def _pg(user: str = "postgres", password: str | None = None, host: str = "127.0.0.1:5432") -> str:
    database = PG_ADMIN.rsplit("/", 1)[1]
    auth = f"{user}:{password}" if password else user
    return f"postgresql+psycopg://{auth}@{host}/{database}"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in (PASSWORD, ENCODED, "s3cr3tq", "s3cr%25t3tq", "s3cr%t3tq"):
            assert secret not in text


def test_redact_hides_the_password_in_the_userinfo_and_the_query() -> None:
    assert redact(f"postgresql+psycopg://u:{ENCODED}@h:5432/d") == (
        "postgresql+psycopg://u:***@h:5432/d"
    )
    shown = redact("postgres://u@h/d?password=s3cr3tq&sslmode=require&sslpassword=s3cr3tq")
    assert "s3cr3tq" not in shown
    assert shown.count("=***") == 2
    assert "sslmode=require" in shown
    assert redact("not a url://u:s3cr3tq@h/d?password=s3cr3tq").count("***") == 2


@pytest.mark.postgres
@pytest.mark.parametrize(
    "how", ["percent_password", "query_password", "socket_query", "socket_and_password"]
)
def test_percent_in_a_postgres_url_upgrades_and_hides_the_password(
    how: str, pg_server, capsys: pytest.CaptureFixture[str]
) -> None:  # noqa: ANN001
    url = pg_server.new_database()
    base, database = url.rsplit("/", 1)
    if how.startswith("socket") and not (SOCKET_DIR / ".s.PGSQL.5432").exists():
        pytest.skip(f"no PostgreSQL socket in {SOCKET_DIR}")
    url = {
        # trust authentication ignores the password: the URL must only survive being handled
        "percent_password": base.replace("postgres@", f"postgres:{ENCODED}@") + f"/{database}",
        "query_password": f"{url}?password=s3cr%25t3tq",
        "socket_query": f"postgresql+psycopg://postgres@/{database}?host={SOCKET_DIR}",
        "socket_and_password": f"postgresql+psycopg://postgres:{ENCODED}@/{database}"
        f"?host={SOCKET_DIR}&password=s3cr3tq",
    }[how]
    code, out, err = _run(capsys, "--db", url, "db", "upgrade")
    assert code == 0, err
    assert out.startswith(redact(url))
    assert "schema at" in out
    _assert_no_secret(out, err)
    assert "Traceback" not in err
    code, out, err = _run(capsys, "--db", url, "db", "current")
    assert code == 0
    assert out.strip().endswith("(head)")


def test_percent_in_a_sqlite_path_upgrades(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    folder = tmp_path / "100% sure"
    folder.mkdir()
    code, out, err = _run(capsys, "--db", f"sqlite:///{folder / 'm.db'}", "db", "upgrade")
    assert code == 0, err
    assert (folder / "m.db").is_file()
    assert "schema at" in out


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _expect_one_line(capsys, url: str, message: str, hint: str) -> None:  # noqa: ANN001
    code, out, err = _run(capsys, "--db", url, "db", "upgrade")
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 2, err
    assert lines[0].startswith("monitor: error: "), err
    assert message in lines[0], err
    assert lines[1].startswith("hint: "), err
    assert hint in lines[1], err
    _assert_no_secret(out, err)


@pytest.mark.postgres
def test_closed_port(pg_server, capsys) -> None:  # noqa: ANN001
    port = _closed_port()
    _expect_one_line(
        capsys,
        _pg(password=ENCODED, host=f"127.0.0.1:{port}"),
        f"cannot connect to PostgreSQL at 127.0.0.1:{port}: nothing accepts connections there",
        "is the server running",
    )


@pytest.mark.postgres
def test_unknown_host(pg_server, capsys) -> None:  # noqa: ANN001
    _expect_one_line(
        capsys,
        _pg(password=ENCODED, host="no-such-host.invalid"),
        "cannot connect to PostgreSQL: unknown host 'no-such-host.invalid'",
        "check the host name",
    )


@pytest.mark.postgres
def test_missing_database(pg_server, capsys) -> None:  # noqa: ANN001
    url = _pg(password=ENCODED).rsplit("/", 1)[0] + "/monitor_no_such_db"
    _expect_one_line(
        capsys,
        url,
        "PostgreSQL at 127.0.0.1:5432 has no database 'monitor_no_such_db'",
        "createdb",
    )


@pytest.mark.postgres
def test_unknown_role(pg_server, capsys) -> None:  # noqa: ANN001
    _expect_one_line(
        capsys,
        _pg(user="monitor_no_such_role", password=ENCODED),
        "PostgreSQL at 127.0.0.1:5432 has no role (user) 'monitor_no_such_role'",
        "createuser monitor_no_such_role",
    )


def test_sqlite_in_a_missing_folder(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "nope" / "deeper" / "m.db"
    _expect_one_line(
        capsys,
        f"sqlite:///{path}",
        f"cannot create the SQLite database {path}: folder {path.parent} does not exist",
        f"mkdir -p {path.parent}",
    )
    assert not path.parent.exists()


def test_sqlite_under_a_file(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    (tmp_path / "plain.txt").write_text("x")
    path = tmp_path / "plain.txt" / "m.db"
    _expect_one_line(
        capsys,
        f"sqlite:///{path}",
        f"{tmp_path / 'plain.txt'} is a file, not a folder",
        "choose another path",
    )


def test_sqlite_in_an_unwritable_folder(capsys) -> None:  # noqa: ANN001
    # root ignores chmod; /proc refuses new files to everyone
    _expect_one_line(
        capsys,
        "sqlite:////proc/monitor-test.db",
        "cannot open the SQLite database /proc/monitor-test.db: unable to open database file",
        "must be writable",
    )


def test_sqlite_file_that_is_not_a_database(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes, not a database\n" * 20)
    _expect_one_line(
        capsys,
        f"sqlite:///{path}",
        f"{path} is not a SQLite database",
        "a new file name",
    )
    assert path.read_text().startswith("these are my notes")


def test_unusable_url_is_a_usage_error(capsys) -> None:  # noqa: ANN001
    code, _, err = _run(capsys, "--db", f"nosuchdb://u:{ENCODED}@h/d", "db", "upgrade")
    assert code == 2
    assert err.splitlines() == [
        "monitor: error: command line: the database URL names an unknown kind of database "
        "'nosuchdb'",
        "hint: write sqlite:///PATH or postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE",
    ]
    _assert_no_secret(err)


def test_unknown_revision_is_a_usage_error(db_url: str, capsys) -> None:  # noqa: ANN001
    code, _out, err = _run(capsys, "--db", db_url, "db", "upgrade", "--revision", "9999")
    assert code == 2
    lines = err.splitlines()
    assert lines[0] == (
        "monitor: error: cannot upgrade to revision '9999': "
        "Can't locate revision identified by '9999'"
    )
    assert lines[1].startswith("hint: 'head' is the newest; the known revisions are 0001, 0002")
    assert len(lines) == 2


def test_schema_from_a_newer_monitor_is_refused(db_url: str, capsys) -> None:  # noqa: ANN001
    from sqlalchemy import text

    from monitor.store.engine import make_engine

    engine = make_engine(db_url)
    with engine.begin() as c:
        [current] = c.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        c.execute(text("UPDATE alembic_version SET version_num = '0999'"))
    try:
        for argv in (["recompute"], ["db", "upgrade"]):
            code, _, err = _run(capsys, "--db", db_url, *argv)
            assert code == 1
            lines = err.splitlines()
            assert len(lines) == 2
            assert "has schema revision 0999, which this monitor does not" in (lines[0])
            assert lines[1] == "hint: run that newer monitor, or point --db at another database"
    finally:
        with engine.begin() as c:
            c.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": current})
        engine.dispose()


def test_sqlite_database_of_something_else(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    import sqlite3

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE campaigns (id INTEGER)")
    code, _, err = _run(capsys, "--db", f"sqlite:///{path}", "recompute")
    assert code == 1
    assert err.splitlines() == [
        f"monitor: error: sqlite:///{path} holds tables monitor did not create "
        "(table campaigns already exists)",
        "hint: give monitor a database of its own (a new SQLite file, an empty PostgreSQL "
        "database)",
    ]


def test_connection_lost_mid_command_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    from sqlalchemy.exc import OperationalError

    from monitor.cli import recompute as recompute_cli

    def lost(*_a: object, **_k: object) -> int:
        raise OperationalError(
            "SELECT 1", {}, Exception("server closed the connection unexpectedly\nmore text")
        )

    monkeypatch.setattr(recompute_cli, "run", lost)
    url = f"postgresql+psycopg://monitor:{ENCODED}@db.example.invalid:5433/prod?password=s3cr3tq"
    code, out, err = _run(capsys, "--db", url, "recompute")
    assert code == 1
    assert err.splitlines() == [
        "monitor: error: cannot use PostgreSQL database 'prod' at db.example.invalid:5433: "
        "server closed the connection unexpectedly",
        "hint: check the server and --db or MONITOR_DATABASE_URL "
        "(postgresql+psycopg://monitor:***@db.example.invalid:5433/prod?password=***)",
    ]
    _assert_no_secret(out, err)


ENCODE = (
    "hint: percent-encode these characters of a user name or password: %40 for '@', %3A for "
    "':', %2F for '/', %3F for '?', %25 for '%'"
)
NO_USER = "; a user and password go before an '@' (USER:PASSWORD@HOST)"
EXAMPLES = "sqlite:///PATH or postgresql+psycopg://USER[:PASSWORD]@HOST[:PORT]/DATABASE"


@pytest.mark.parametrize(
    ("url", "message", "hint"),
    [
        (
            "postgresql+psycopg://postgres:S3cretPW@127.0.0.1:notaport/x",
            "has a port that is not a number from 1 to 65535",
            "hint: write HOST:PORT, e.g. 127.0.0.1:5432",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@127.0.0.1:70000/x",
            "has a port that is not a number from 1 to 65535",
            "hint: write HOST:PORT, e.g. 127.0.0.1:5432",
        ),
        (
            "postgresql+psycopg://postgres:Pa@ss:Word99@127.0.0.1:5432/x",
            "has more than one '@'",
            ENCODE,
        ),
        ("postgresql+psycopg://postgres:S3c@retPW@127.0.0.1:1/x", "has more than one '@'", ENCODE),
        (
            "postgresql+psycopg://postgres:S3cretPW@[::1:5432/x",
            "has an IPv6 host without its closing ']'",
            "hint: write [::1]:5432",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@[fe80::zz]:5432/x",
            "has a host in brackets that is not an IPv6 address",
            "hint: write [::1]:5432",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@::1:5432/x",
            "has more than one ':' in its host",
            "hint: write an IPv6 host in brackets ([::1]:5432)",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@127.0.0.1/x?connect_timeout=abc",
            "has an option connect_timeout that is not a whole number",
            "hint: write connect_timeout=10 (seconds for connect_timeout)",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@127.0.0.1/x?conect_timeout=3",
            "has the option 'conect_timeout', which PostgreSQL does not know",
            "hint: see the connection parameters of libpq (connect_timeout, sslmode, host, ...)",
        ),
        (
            "postgresql+asyncpg://postgres:S3cretPW@127.0.0.1/x",
            "names the driver 'asyncpg', which monitor does not use for PostgreSQL",
            "hint: write postgresql+psycopg://...",
        ),
        (
            "mysql://postgres:S3cretPW@127.0.0.1/x",
            "names an unknown kind of database 'mysql'",
            f"hint: write {EXAMPLES}",
        ),
        (
            "postgres:S3cretPW@127.0.0.1/x",
            "does not start with the kind of database and '://'",
            f"hint: write {EXAMPLES}",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW/x",
            "has a port that is not a number from 1 to 65535",
            f"hint: write HOST:PORT, e.g. 127.0.0.1:5432{NO_USER}",
        ),
        (
            "postgresql+psycopg://postgres:S3cretPW@db host/x",
            "has a host with characters no host name has",
            "hint: write HOST:PORT",
        ),
    ],
)
@pytest.mark.parametrize("where", ["--db", "env", "file"])
def test_malformed_url_is_a_usage_error_that_quotes_no_secret(
    url: str, message: str, hint: str, where: str, tmp_path: Path, monkeypatch, capsys
) -> None:  # noqa: ANN001
    """Issue 30 item 9: a traceback, a password quoted in a message or a bad option reported
    as a timeout; now one usage error naming the part of the URL that is wrong, checked
    before any connection, whichever layer gave it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MONITOR_DATABASE_URL", raising=False)
    argv = ["db", "current"]
    if where == "--db":
        prefix = "command line"
        argv = ["--db", url, *argv]
    elif where == "env":
        prefix = "environment variable MONITOR_DATABASE_URL"
        monkeypatch.setenv("MONITOR_DATABASE_URL", url)
    else:
        prefix = "monitor.toml"
        (tmp_path / "monitor.toml").write_text(f'database_url = "{url}"\n')
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"monitor: error: {prefix}: the database URL {message}", hint]
    assert "S3cretPW" not in err
    assert "retPW" not in err
    assert "Word99" not in err


def test_malformed_url_in_the_python_api_is_refused_before_connecting() -> None:
    from monitor.core.errors import ConfigError
    from monitor.store.engine import make_engine

    with pytest.raises(ConfigError) as info:
        make_engine("postgresql+psycopg://u:Pa@ss:Word99@127.0.0.1:5432/x")
    assert str(info.value) == "the database URL has more than one '@'"


def test_well_formed_urls_pass_the_check() -> None:
    from monitor.store.url import check_url

    for url in (
        "sqlite:///monitor.db",
        "sqlite://",
        "sqlite:////tmp/a@b:c?d.db",
        "postgresql+psycopg://u:p%40ss@h:5432/d",
        "postgresql+psycopg://u:pa:ss@h/d",  # ':' in a password is read right
        "postgresql+psycopg://u@[::1]:5432/d",
        "postgresql+psycopg://u@[fe80::1%25eth0]/d",
        "postgresql+psycopg://u@/d?host=/var/run/postgresql&connect_timeout=5",
        "postgresql+psycopg://u@h/d?password=x%40y&sslmode=require&port=5432",
        "postgres://u@h/d",
    ):
        check_url(url)
