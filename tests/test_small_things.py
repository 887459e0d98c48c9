"""Small things in the way (issue 40): a misspelt option gets a did-you-mean, a hint names the
real campaign, a Toloka block list scoped to a project or a pool, a platform file going into a
campaign of another platform draws a warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

PLATFORMS = Path(__file__).parent / "data" / "platforms"


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["workers", "--campain", "x"], "monitor workers: error: unknown option --campain: "
         "did you mean --campaign?"),
        (["ingest", "f.csv", "--campain", "x"], "monitor ingest: error: unknown option "
         "--campain: did you mean --campaign?"),
        (["campaign", "create", "x", "--kind", "rating", "--mn", "1"],
         "monitor campaign create: error: unknown option --mn: did you mean --min?"),
        (["workers", "--campaign", "x", "--flaged"],
         "monitor workers: error: unknown option --flaged: did you mean --flagged?"),
        (["workers", "--campaign", "x", "--zzzzzz"],
         "monitor workers: error: unrecognized arguments: --zzzzzz"),
        (["workers"], "monitor workers: error: the following arguments are required: --campaign"),
    ],
)  # fmt: skip
def test_a_misspelt_option_gets_a_did_you_mean(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert capsys.readouterr().err.splitlines()[0] == line


def test_hint_names_the_campaign_and_toloka_scopes(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", db_url]
    assert _cli(capsys, "campaign", "create", "my labels", "--kind", "label", *db)[0] == 0
    data = tmp_path / "a.csv"
    data.write_text("worker,item,value\nw1,i1,yes\nw2,i1,no\n")
    assert _cli(capsys, "ingest", str(data), "--campaign", "my labels", *db)[0] == 0
    code, _, err = _cli(capsys, "block", "nobody", "--campaign", "my labels", "--reason", "x", *db)
    assert code == 2
    assert err.splitlines()[1] == "hint: list them with: monitor workers --campaign 'my labels'"

    name = ["--campaign", "my labels", *db]
    assert _cli(capsys, "block", "w1", *name, "--reason", "spam")[0] == 0
    for scope, row in (
        ([], "w1\tALL_PROJECTS\t\t\t"),
        (["--project", "123"], "w1\tPROJECT\t123\t\t"),
        (["--pool", "456"], "w1\tPOOL\t\t456\t"),
    ):
        code, out, _ = _cli(capsys, "export", "blocklist", *name, "--platform", "toloka", *scope)
        assert code == 0, scope
        assert out.splitlines()[1].startswith(row), scope
    for argv, message in (
        (["blocklist", "--platform", "mturk", "--pool", "1"], "--project and --pool are for"),
        (["weights", "--platform", "toloka", "--pool", "1"], "--project and --pool are for"),
        (["blocklist", "--platform", "toloka", "--pool", "1 2"], "--pool '1 2': not a Toloka id"),
    ):
        code, out, err = _cli(capsys, "export", *argv, *name)
        assert (code, out) == (2, ""), argv
        assert err.startswith(f"monitor: error: {message}"), argv
    with pytest.raises(SystemExit):
        main(
            ["export", "blocklist", *name, "--platform", "toloka", "--pool", "1", "--project", "2"]
        )
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_platform_file_in_a_campaign_of_another_platform_draws_a_warning(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ["--db", db_url]
    for name, platform in (("from mturk", "mturk"), ("from toloka", "toloka"), ("plain", None)):
        where = ["--platform", platform] if platform else []
        assert _cli(capsys, "campaign", "create", name, "--kind", "label", *where, *db)[0] == 0
    tsv = str(PLATFORMS / "toloka_assignments.tsv")
    code, out, _ = _cli(capsys, "ingest", tsv, "--campaign", "from mturk", *db)
    warning = [line for line in out.splitlines() if line.startswith("warning:")]
    assert code == 0
    assert len(warning) == 1
    assert warning[0].startswith(
        "warning: a toloka file in campaign from mturk of platform mturk: its worker ids are "
        "toloka's"
    )
    assert "monitor ingest undo --campaign 'from mturk' --batch" in warning[0]
    for name in ("from toloka", "plain"):  # its own platform, or the first platform file
        code, out, _ = _cli(capsys, "ingest", tsv, "--campaign", name, *db)
        assert code == 0
        assert "warning:" not in out
    code, out, _ = _cli(capsys, "campaign", "list", *db)
    assert "plain\t" in out
    assert out.rstrip().endswith("platform toloka")
