from __future__ import annotations

import pytest

from monitor.errors import ConfigError
from monitor.settings import Settings, describe, load_settings


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
