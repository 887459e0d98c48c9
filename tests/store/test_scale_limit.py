"""A rating scale too wide for the measures' arithmetic is refused where it is declared."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from monitor.store.campaigns import SCALE_LIMIT


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("lo", "hi"), [("-1e308", "1e308"), ("0", "1e200"), ("-1e61", "0")])
def test_create_refuses_a_scale_too_wide(db_url: str, capsys, lo: str, hi: str) -> None:  # noqa: ANN001
    code, _, err = _run(capsys, "campaign", "create", "c", "--kind", "rating", f"--min={lo}",
                        f"--max={hi}", "--db", db_url)  # fmt: skip
    assert code == 2
    assert err.startswith("monitor: error: ")
    assert "a rating scale must lie within" in err
    assert "Traceback" not in err
    listed = _run(capsys, "campaign", "list", "--db", db_url)[1]
    assert not any(line.split("\t")[0] == "c" for line in listed.splitlines())


def test_create_accepts_the_limit(db_url: str, capsys) -> None:  # noqa: ANN001
    code, _, err = _run(capsys, "campaign", "create", "c", "--kind", "rating",
                        f"--min={-SCALE_LIMIT}", f"--max={SCALE_LIMIT}", "--db", db_url)  # fmt: skip
    assert code == 0, err


def test_analyze_refuses_a_scale_too_wide(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    data = tmp_path / "r.csv"
    data.write_text("worker,item,value\nw1,i1,1\nw2,i1,2\n", encoding="utf-8")
    code, _, err = _run(capsys, "analyze", str(data), "--kind", "rating", "--min=-1e308",
                        "--max=1e308")  # fmt: skip
    assert code == 2
    assert "a rating scale must lie within" in err
