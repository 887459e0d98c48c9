from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from monitor.core.errors import ConfigError
from monitor.core.settings import Settings, describe, load_settings


def test_layers_in_order(tmp_path) -> None:  # noqa: ANN001
    cfg = tmp_path / "monitor.toml"
    cfg.write_text('seed = 1\nmin_judgments = 4\nreport_dir = "from-file"\n')
    env = {"MONITOR_SEED": "2", "MONITOR_REPORT_DIR": "from-env", "OTHER": "x"}
    s = load_settings(cfg, env=env, overrides={"seed": 3, "report_dir": None})
    assert (s.seed, s.min_judgments, s.report_dir) == (3, 4, "from-env")
    assert load_settings(tmp_path / "monitor.toml", env={}).seed == 1


def test_defaults_without_file(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.chdir(tmp_path)
    assert load_settings(env={}) == Settings()


@pytest.mark.parametrize(
    ("content", "env", "message"),
    [
        ("min_judgment = 3\n", {}, "unknown setting 'min_judgment'"),
        ('seed = "x"\n', {}, "setting 'seed' expects int, got 'x'"),
        (
            "",
            {"MONITOR_SEED": "1.5"},
            "environment variable MONITOR_SEED: setting 'seed' expects int",
        ),
        ('policy = "ban"\n', {}, "setting 'policy' must be one of suggest, block, down_weight"),
        ("seed = [\n", {}, "not valid TOML"),
    ],
)
def test_errors_name_the_key(tmp_path, content: str, env: dict, message: str) -> None:  # noqa: ANN001
    cfg = tmp_path / "monitor.toml"
    cfg.write_text(content)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        load_settings(cfg, env=env)


def test_every_setting_is_documented() -> None:
    undocumented = [k for k, _, doc in describe() if not doc]
    assert undocumented == []


def test_docs_list_every_setting() -> None:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text()
    missing = [k for k, _, _ in describe() if f"| `{k}` |" not in text]
    assert missing == []


# --- ranges (issue 30, item 8) ------------------------------------------------------------------

OUT_OF_RANGE = [
    ("bootstrap_samples", "-1", -1, "an integer in [0, 100000]"),
    ("quality_margin", "nan", "nan", "a number in [0, 1]"),
    ("model_max_iter", "0", 0, "an integer >= 1"),
    ("down_weight", "5", 5.0, "a number in [0, 1]"),
    ("low_agreement_ratio", "-0.5", -0.5, "a number in [0, 1]"),
    ("min_judgments", "-3", -3, "an integer >= 1"),
    ("max_bias", "inf", "inf", "a number in [0, 1]"),
    ("keep_item_runs", "0", 0, "an integer >= 1"),
    ("ambiguous_p", "-0.01", -0.01, "a number in [0, 1]"),
    ("flag_tolerance", "-0.5", -0.5, "-1 or a number >= 0"),
    ("nightly_at", "'25:00'", "25:00", "a time HH:MM, 00:00 to 23:59"),
    ("phi", "'exact'", "exact", "one of off, map, full, nuts"),
]


def _toml(raw: str) -> str:
    return {"nan": "nan", "inf": "inf"}.get(raw, raw)


@pytest.mark.parametrize(("key", "raw", "value", "accepts"), OUT_OF_RANGE)
def test_a_value_out_of_range_is_one_line_in_every_layer(
    tmp_path, key: str, raw: str, value, accepts: str
) -> None:  # noqa: ANN001
    """Issue 30 item 8: each of these was accepted when read and failed the run later, or
    silently changed the results."""
    shown = repr(float(value)) if value in ("nan", "inf") else repr(value)
    cfg = tmp_path / "monitor.toml"
    cfg.write_text(f"{key} = {_toml(raw)}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(cfg, env={})
    assert str(info.value) == f"{cfg}: setting '{key}' must be {accepts}, got {shown}"
    assert info.value.hint is None
    assert info.value.exit_code == 2
    name = f"MONITOR_{key.upper()}"
    with pytest.raises(ConfigError) as info:
        load_settings(None, env={name: raw.strip("'")})
    assert str(info.value) == (
        f"environment variable {name}: setting '{key}' must be {accepts}, got {shown}"
    )
    with pytest.raises(ConfigError) as info:
        Settings().replace(**{key: float(value) if value in ("nan", "inf") else value})
    assert str(info.value) == f"command line: setting '{key}' must be {accepts}, got {shown}"


@pytest.mark.parametrize("key", [f.name for f in fields(Settings) if f.type == "float"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_no_float_setting_takes_nan_or_inf(key: str, bad: float) -> None:
    with pytest.raises(ConfigError, match=rf"^command line: setting '{key}' must be .*, got "):
        Settings().replace(**{key: bad})
    with pytest.raises(ConfigError, match=rf"^environment variable MONITOR_{key.upper()}: "):
        load_settings(None, env={f"MONITOR_{key.upper()}": str(bad)})


def test_every_default_is_in_its_range_and_the_ends_are_accepted() -> None:
    from monitor.core.settings import Range, _accepts

    for key, accepts in _accepts().items():
        if isinstance(accepts, Range):
            for end in (accepts.low, accepts.high, *accepts.also):
                if end is not None and not (
                    (end == accepts.low and accepts.low_open)
                    or (end == accepts.high and accepts.high_open)
                ):
                    kind = type(getattr(Settings(), key))
                    Settings().replace(**{key: kind(end)})


@given(
    low=st.one_of(st.none(), st.floats(-10, 10)),
    high=st.one_of(st.none(), st.floats(-10, 10)),
    x=st.floats(allow_nan=True, allow_infinity=True),
)
def test_a_range_holds_what_its_text_says(low, high, x: float) -> None:  # noqa: ANN001
    from monitor.core.settings import Range

    r = Range(low, high)
    expected = math.isfinite(x) and (low is None or x >= low) and (high is None or x <= high)
    assert r.holds(x) == expected


def test_the_environment_names_the_variable_through_the_cli(tmp_path, monkeypatch, capsys) -> None:  # noqa: ANN001
    from monitor.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MONITOR_MIN_JUDGMENTS", "-3")
    assert main(["campaign", "list"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "monitor: error: environment variable MONITOR_MIN_JUDGMENTS: setting 'min_judgments' "
        "must be an integer >= 1, got -3"
    ]
    assert not (tmp_path / "monitor.db").exists()


def test_docs_table_is_generated_from_the_declarations() -> None:
    """docs/settings.md holds exactly the table the declarations give (regenerate it with
    ``python -m monitor.core.settings docs/settings.md``)."""
    from pathlib import Path

    from monitor.core.settings import TABLE_END, TABLE_START, markdown_table

    text = (Path(__file__).resolve().parents[1] / "docs" / "settings.md").read_text()
    table = text.split(TABLE_START, 1)[1].split(TABLE_END, 1)[0].strip()
    assert table == markdown_table()


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("min_judgment", "did you mean 'min_judgments'?"),
        ("zzz", "known keys: " + ", ".join(f.name for f in fields(Settings))),
    ],
)
def test_an_unknown_key_reads_alike_in_each_layer(tmp_path, key: str, hint: str) -> None:  # noqa: ANN001
    """The file, the command line and a campaign's own settings refuse an unknown key with
    the same words and hint (one check, ``settings._known``); the file's names the file."""
    from monitor.core.settings import campaign_value

    cfg = tmp_path / "monitor.toml"
    cfg.write_text(f"{key} = 3\n")
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    calls = [
        (lambda: load_settings(cfg, env={}), f"{cfg}: unknown setting '{key}'"),
        (lambda: load_settings(empty, env={}, overrides={key: 3}), f"unknown setting '{key}'"),
        (lambda: campaign_value(key, "3"), f"unknown setting '{key}'"),
        (lambda: campaign_value(key, None), f"unknown setting '{key}'"),
    ]
    for call, message in calls:
        with pytest.raises(ConfigError) as info:
            call()
        assert (str(info.value), info.value.hint) == (message, hint)
