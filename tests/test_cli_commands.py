"""Every command described and pointing to its own help; report --json; a new PostgreSQL
database gets its schema on first use (issue 29, item 8)."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterator

import pytest

from monitor.cli import build_parser, main
from monitor.cli.parsing import Parser


def _commands(
    parser: argparse.ArgumentParser, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser of the command line with the words that reach it (words of
    :class:`Parser` included: ``ingest history``)."""
    yield words, parser
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                yield from _commands(sub, (*words, name))
    if isinstance(parser, Parser):
        for name, sub in parser.words.items():
            yield from _commands(sub, (*words, name))


COMMANDS = [w for w, _ in _commands(build_parser()) if w]


def test_every_command_has_a_description() -> None:
    missing = [
        " ".join(w) for w, p in _commands(build_parser()) if not (p.description or "").strip()
    ]
    assert missing == []
    assert {"workers", "block", "down-weight", "clear", "campaign list", "db upgrade",
            "ingest history", "ingest rejected"} <= {" ".join(w) for w in COMMANDS}  # fmt: skip


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_help_of_every_command(words: tuple[str, ...], capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as info:
        main([*words, "--help"])
    out = capsys.readouterr().out
    assert info.value.code == 0
    assert out.startswith(f"usage: monitor {' '.join(words)} ")


@pytest.mark.parametrize(
    "argv",
    [
        ["ingest", "x.csv", "--campaign", "c", "--frobnicate"],
        ["workers", "--campaign", "c", "--frobnicate"],
        ["campaign", "list", "--frobnicate"],
        ["campaign", "create", "x", "--kind", "label", "--frobnicate"],
        ["db", "upgrade", "--frobnicate"],
        ["export", "blocklist", "--campaign", "c", "--frobnicate"],
        ["ingest", "rejected", "--campaign", "c", "--frobnicate"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_an_unknown_option_points_to_the_commands_own_help(argv: list[str], capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err.splitlines()
    prog = "monitor " + " ".join(a for a in argv[:2] if a in {w for c in COMMANDS for w in c})
    assert info.value.code == 2
    assert err[0] == f"{prog}: error: unrecognized arguments: --frobnicate"
    assert err[-1] == f"(see '{prog} --help')"


def test_report_json_is_format_json(db_url: str, capsys) -> None:  # noqa: ANN001
    from monitor.store.engine import make_engine
    from tests.report.fixtures import rating_campaign

    engine = make_engine(db_url)
    rating_campaign(engine)
    engine.dispose()
    base = ["report", "--campaign", "quality", "--db", db_url]
    assert main([*base, "--json"]) == 0
    by_flag = capsys.readouterr().out
    assert main([*base, "--format", "json"]) == 0
    assert capsys.readouterr().out == by_flag
    assert by_flag.startswith("{")
    assert main([*base, "--json", "--format", "json"]) == 0
    assert capsys.readouterr().out == by_flag
    assert main([*base, "--json", "--format", "html"]) == 2
    assert capsys.readouterr().err == (
        "monitor: error: --json and --format html ask for two formats\nhint: give one\n"
    )


@pytest.mark.postgres
def test_a_new_postgres_database_gets_its_schema_on_first_use(pg_server, capsys) -> None:  # noqa: ANN001
    from monitor.store.engine import make_engine, redact
    from monitor.store.migrate import current_revision, head_revision

    url = pg_server.new_database()
    assert main(["campaign", "list", "--db", url]) == 0
    out, err = capsys.readouterr()
    assert out == "no campaigns (create one: monitor campaign create NAME --kind KIND)\n"
    assert err == f"{redact(url)}: a new database: schema created (revision {head_revision()})\n"
    assert main(["campaign", "list", "--db", url]) == 0
    assert capsys.readouterr().err == ""  # once
    engine = make_engine(url)
    assert current_revision(engine) == head_revision()
    engine.dispose()


@pytest.mark.postgres
def test_two_processes_create_a_new_schema_once(pg_server) -> None:  # noqa: ANN001
    from monitor.store.engine import make_engine
    from monitor.store.migrate import current_revision, ensure_schema, head_revision

    url = pg_server.new_database()
    engines = [make_engine(url) for _ in range(3)]
    results: list[bool] = []
    errors: list[BaseException] = []

    def start(engine) -> None:  # noqa: ANN001
        try:
            results.append(ensure_schema(engine))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == [False, False, True]
    assert current_revision(engines[0]) == head_revision()
    for e in engines:
        e.dispose()


@pytest.mark.postgres
def test_a_postgres_database_with_other_tables_is_not_touched(pg_server, capsys) -> None:  # noqa: ANN001
    from sqlalchemy import text

    from monitor.store.engine import make_engine

    url = pg_server.new_database()
    engine = make_engine(url)
    with engine.begin() as c:
        c.execute(text("CREATE TABLE notes (id integer)"))
    engine.dispose()
    assert main(["campaign", "list", "--db", url]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("monitor: error: the database schema is at nothing (empty database)")
    assert err[1] == "hint: run: monitor --db URL db upgrade"
