"""Settings of a campaign's own (issue 40): ``monitor campaign set`` over the settings file
and the environment, recorded by the run, said in the report; bad keys and values refused
whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitor.cli import main
from monitor.core.settings import Settings, campaign_keys, campaign_value

ROWS = [(f"w{w}", f"i{i}", str(1 + (w * i) % 5)) for w in range(1, 6) for i in range(1, 9)]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_campaign_of_its_own_settings(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MONITOR_BOOTSTRAP_SAMPLES", "0")
    monkeypatch.setenv("MONITOR_PHI", "off")
    monkeypatch.setenv("MONITOR_CACHE_DIR", "")
    config = tmp_path / "monitor.toml"
    config.write_text("min_judgments = 4\nspeeder_ratio = 0.3\n")
    db = ["--db", db_url, "--config", str(config)]
    data = tmp_path / "a.csv"
    data.write_text("worker,item,value\n" + "".join(f"{w},{i},{v}\n" for w, i, v in ROWS))
    for name in ("a", "b"):
        assert _cli(capsys, "campaign", "create", name, "--kind", "rating", "--min", "1",
                    "--max", "5", *db)[0] == 0  # fmt: skip
        assert _cli(capsys, "ingest", str(data), "--campaign", name, *db)[0] == 0
    code, out, _ = _cli(capsys, "campaign", "set", "a", "min_judgments=6", "policy=block", *db)
    assert code == 0
    assert "a: min_judgments = 6" in out
    code, out, _ = _cli(capsys, "campaign", "show", "a", *db)
    assert "  min_judgments = 6 (default 10; from this campaign)" in out
    assert "  policy = 'block' (default 'suggest'; from this campaign)" in out
    assert "  speeder_ratio = 0.3 (default 0.25; from settings file, environment or flags)" in out

    # bad input: one line, exit 2, nothing changed
    for pair, message in (
        ("min_judgment=3", "unknown setting 'min_judgment'"),
        ("min_judgments=0", "setting 'min_judgments' must be an integer >= 1, got 0"),
        ("min_judgments=many", "setting 'min_judgments' expects int, got 'many'"),
        ("policy=ban", "setting 'policy' must be one of suggest, block, down_weight"),
        ("cache_dir=/tmp", "setting 'cache_dir' holds for the whole process"),
        ("min_judgments", "'min_judgments' is not KEY=VALUE"),
    ):
        code, _, err = _cli(capsys, "campaign", "set", "a", "max_bias=0.2", pair, *db)
        assert code == 2, (pair, err)
        assert message in err.splitlines()[0], (pair, err)
        assert len(err.splitlines()) <= 2
    code, _, err = _cli(capsys, "campaign", "set", "nope", "max_bias=0.2", *db)
    assert code == 2
    assert "no campaign named 'nope'" in err
    code, again, _ = _cli(capsys, "campaign", "show", "a", *db)
    assert again == out
    assert "max_bias" not in again

    assert _cli(capsys, "recompute", *db)[0] == 0
    docs = {}
    for name in ("a", "b"):
        code, out, _ = _cli(capsys, "report", "--campaign", name, "--json", *db)
        docs[name] = json.loads(out)["run"]["parameters"]
    assert docs["a"]["settings"]["min_judgments"] == 6
    assert docs["a"]["own_settings"] == [
        "min_judgments",
        "policy",
    ]
    assert docs["b"]["settings"]["min_judgments"] == 4
    assert "own_settings" not in docs["b"]
    assert docs["a"]["settings"]["speeder_ratio"] == docs["b"]["settings"]["speeder_ratio"] == 0.3
    html = tmp_path / "a.html"
    assert _cli(capsys, "report", "--campaign", "a", "--out", str(html), *db)[0] == 0
    page = html.read_text()
    assert "min_judgments 6 (default 10, this campaign&#39;s own)" in page
    assert "speeder_ratio 0.3 (default 0.25)" in page

    # 'KEY=' drops the campaign's own value: the file's holds again
    code, out, _ = _cli(capsys, "campaign", "set", "a", "min_judgments=", *db)
    assert code == 0
    assert "min_judgments dropped" in out
    code, out, _ = _cli(capsys, "campaign", "show", "a", *db)
    assert "min_judgments = 4 (default 10; from settings file" in out


def test_campaign_values_are_checked_as_the_files_are() -> None:
    assert "database_url" not in campaign_keys()
    assert "min_judgments" in campaign_keys()
    assert campaign_value("down_weight", "0.25") == 0.25
    assert Settings().for_campaign({"down_weight": 0.25, "gone_key": 1}).down_weight == 0.25
