"""The reports in a real browser: headless Chromium driven by Selenium through Debian's
chromedriver (``.ci/run`` installs both).

For the demo's four kinds, a campaign whose ids and texts carry HTML and script payloads, and
a real data set taken through the documented flow (campaign create, ingest, recompute,
report), at 1280 and 1920 px: no element wider than the page, no console error, every flag of
the JSON document on the page (or counted among the rows the page says it left to the JSON
document), sorting and "show all" work, the index's links resolve, the payloads stay inert.
Full-page screenshots are kept in ``.screenshots/`` (git-ignored) for a person to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monitor.cli import main
from monitor.store.engine import make_engine
from tests.golden import shared_dir
from tests.report.fixtures import XSS, XSS_ATTR, rating_campaign

CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("CHROMIUM"),
            "/usr/bin/chromium",
            shutil.which("chromium"),
            shutil.which("chromium-browser"),
        )
        if p and Path(p).is_file()
    ),
    None,
)
DRIVER = next(
    (
        p
        for p in (
            os.environ.get("CHROMEDRIVER"),
            "/usr/bin/chromedriver",
            shutil.which("chromedriver"),
        )
        if p and Path(p).is_file()
    ),
    None,
)
SHOTS = Path(
    os.environ.get("MONITOR_SCREENSHOT_DIR", Path(__file__).resolve().parents[2] / ".screenshots")
)
WIDTHS = (1280, 1920)
REAL = shared_dir() / "real-data" / "rte"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        CHROMIUM is None or DRIVER is None, reason="no chromium and chromedriver on this machine"
    ),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="monitor-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1280,1000",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(str(DRIVER)))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``monitor demo``'s four campaigns and a hostile one, written by ``report --all``."""
    root = tmp_path_factory.mktemp("demo")
    db = f"sqlite:///{root / 'monitor.db'}"
    assert main(["demo", "--db", db, "--report-dir", str(root / "demo-reports")]) == 0
    rating_campaign(make_engine(db), XSS_ATTR, evil=True)
    assert main(["report", "--all", "--db", db, "--out", str(root / "all")]) == 0
    return root / "all"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real data set through the documented flow: create, ingest, recompute, report."""
    if not (REAL / "judgments.csv").is_file():
        pytest.skip(
            f"no real data set at {REAL} (the shared folder: ../shared beside the checkout, or MONITOR_SHARED)"
        )
    root = tmp_path_factory.mktemp("real")
    db = ["--db", f"sqlite:///{root / 'monitor.db'}"]
    meta = json.loads((REAL / "meta.json").read_text(encoding="utf-8"))
    assert main(["campaign", "create", "rte", *meta["args"], *db]) == 0
    assert main(["ingest", str(REAL / "judgments.csv"), "--campaign", "rte", *db]) == 0
    assert main(["recompute", *db]) == 0
    out = root / "reports"
    assert main(["report", "--campaign", "rte", "--out", str(out / "rte.html"), *db]) == 0
    assert main(["report", "--all", "--out", str(out / "all"), *db]) == 0
    return out


def _open(driver: Any, page: Path, width: int) -> None:
    driver.set_window_size(width, 1000)
    driver.get(page.resolve().as_uri())
    driver.get_log("browser")  # what an earlier page logged is not this page's


def _console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


WIDER = """
const page = document.documentElement.clientWidth;
const out = [];
for (const e of document.querySelectorAll('body *')) {
  const r = e.getBoundingClientRect();
  if (r.width > 0 && (r.right > page + 1 || r.left < -1)) {
    out.push(e.tagName + (e.id ? '#' + e.id : '') + ' ' + Math.round(r.left) + '..' +
             Math.round(r.right));
  }
}
// content spilling out of its own box (a long id in a cell) is as bad as a box too wide
for (const e of document.querySelectorAll('td, th, li, p, div, h1, h2, h3')) {
  if (e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1 &&
      getComputedStyle(e).overflowX === 'visible') {
    out.push(e.tagName + ' spills: ' + e.textContent.slice(0, 40));
  }
}
return [document.documentElement.scrollWidth, page, out.slice(0, 10)];
"""


def _fits(driver: Any) -> None:
    scroll, page, wider = driver.execute_script(WIDER)
    assert wider == [], (scroll, page, wider)
    assert scroll <= page, (scroll, page, wider)


def _screenshot(driver: Any, name: str, width: int) -> None:
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(int(height) + 40, 16000))
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / f"{name}-{width}.png"))
    driver.set_window_size(width, 1000)


SHOWN = """
const out = [];
for (const e of document.querySelectorAll('[data-subject]')) {
  const box = e.closest('[data-rule]');
  out.push([e.getAttribute('data-scope'), e.getAttribute('data-subject'),
            e.textContent + ' ' + (e.getAttribute('data-rules') || '') + ' ' +
            (box ? box.getAttribute('data-rule') : '')]);
}
const left = {};
for (const t of document.querySelectorAll('table[data-total]')) {
  left[t.id] = Number(t.getAttribute('data-total')) - Number(t.getAttribute('data-shown'));
}
return [out, left];
"""


def _flags_on_page(driver: Any, doc: dict[str, Any]) -> None:
    """Every flag is on the page (an element of its scope and subject naming its rule, or in a
    table of that rule), or among the rows a table says it left to the JSON document."""
    shown, left = driver.execute_script(SHOWN)
    texts: dict[tuple[str, str], str] = {}
    for scope, subject, text in shown:
        texts[(scope, subject)] = texts.get((scope, subject), "") + " " + text
    missing: dict[str, int] = {}
    for f in doc["flags"]:
        if f["scope"] == "campaign":
            continue
        if f["rule"] not in texts.get((f["scope"], f["subject"]), ""):
            missing[f["scope"]] = missing.get(f["scope"], 0) + 1
    assert "worker" not in missing, missing  # every flagged worker is named
    cut = {"item": left.get("ambiguous-table", 0), "pair": left.get("pairs-table", 0)}
    for scope, n in missing.items():
        assert n <= cut.get(scope, 0), (scope, n, left)


def _sorting(driver: Any, table_id: str) -> None:
    """Clicking a numeric header sorts the table's rows up, then down; "show all" shows
    every row, and sorting keeps the first rows in view."""
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.ID, table_id)
    heads = table.find_elements(By.CSS_SELECTOR, "thead th")
    keys = driver.execute_script(
        """const t = document.getElementById(arguments[0]);
           return Array.from(t.tBodies[0].rows, r => Array.from(r.cells,
             c => c.getAttribute('data-sort')));""",
        table_id,
    )

    # the numeric column with the most distinct values
    def distinct(k: int) -> int:
        values = {row[k] for row in keys if k < len(row) and row[k] not in (None, "")}
        try:
            [float(v) for v in values]
        except ValueError:
            return 0
        return len(values)

    column = max(range(len(heads)), key=distinct)
    assert distinct(column) > 1, f"{table_id}: no numeric column to sort"

    def visible_values() -> list[float]:
        return driver.execute_script(
            """const t = document.getElementById(arguments[0]);
               return Array.from(t.tBodies[0].rows).filter(r => r.offsetParent !== null)
                 .map(r => r.cells[arguments[1]].getAttribute('data-sort'))
                 .filter(v => v !== null && v !== '').map(Number);""",
            table_id,
            column,
        )

    heads[column].click()
    up = visible_values()
    assert up == sorted(up)
    assert up
    heads[column].click()
    down = visible_values()
    assert down == sorted(down, reverse=True)
    buttons = driver.find_elements(By.CSS_SELECTOR, f'button.showall[data-table="{table_id}"]')
    if buttons:
        n = len(keys)
        assert len(down) < n
        buttons[0].click()
        assert len(visible_values()) == sum(1 for row in keys if row[column] not in (None, ""))
        buttons[0].click()


def _check_report(driver: Any, page: Path, doc: dict[str, Any], width: int, name: str) -> None:
    _open(driver, page, width)
    assert _console_errors(driver) == []
    _fits(driver)
    _flags_on_page(driver, doc)
    _screenshot(driver, name, width)
    _sorting(driver, "workers-table")
    assert _console_errors(driver) == []


def _reports(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    index = json.loads((folder / "index.json").read_text(encoding="utf-8"))
    return [
        (folder / c["report"], json.loads((folder / c["json"]).read_text(encoding="utf-8")))
        for c in index["campaigns"]
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_demo_reports_in_chromium(browser: Any, demo: Path, width: int) -> None:
    reports = _reports(demo)
    kinds = {doc["campaign"]["kind"] for _, doc in reports}
    assert kinds == {"rating", "label", "multilabel", "pairwise"}
    for page, doc in reports:
        _check_report(browser, page, doc, width, f"report-{page.stem}")
        if doc["campaign"]["kind"] == "pairwise":
            _sorting(browser, "scores-table")


@pytest.mark.parametrize("width", WIDTHS)
def test_index_links_resolve(browser: Any, demo: Path, width: int) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, demo / "index.html", width)
    assert _console_errors(browser) == []
    _fits(browser)
    _screenshot(browser, "index", width)
    links = browser.find_elements(By.CSS_SELECTOR, "#index-table a")
    hrefs = [a.get_attribute("href") for a in links]
    raw = [browser.execute_script("return arguments[0].getAttribute('href')", a) for a in links]
    assert len(hrefs) == 2 * 5  # a report and a JSON document per campaign
    for href, relative in zip(hrefs, raw, strict=True):
        assert "/" not in relative
        assert not relative.startswith(("http", "javascript"))
        assert href.startswith("file://"), href
        assert Path(href[len("file://") :]).is_file(), href
    report = next(a for a in links if "report" in (a.get_attribute("class") or ""))
    name = report.text
    report.click()
    assert browser.find_element(By.TAG_NAME, "h1").text == name
    assert _console_errors(browser) == []


def test_payloads_stay_inert(browser: Any, demo: Path) -> None:
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    index = json.loads((demo / "index.json").read_text(encoding="utf-8"))
    [evil] = [c for c in index["campaigns"] if c["campaign"] == XSS_ATTR]
    for page in (demo / evil["report"], demo / "index.html"):
        _open(browser, page, 1280)
        with pytest.raises(NoAlertPresentException):
            browser.switch_to.alert  # noqa: B018 - an alert would have fired
        assert browser.find_elements(By.TAG_NAME, "img") == []
        assert len(browser.find_elements(By.TAG_NAME, "script")) == 1
        body = browser.find_element(By.TAG_NAME, "body").text
        assert XSS_ATTR in body  # shown as text
        assert _console_errors(browser) == []
    _open(browser, demo / evil["report"], 1280)
    assert XSS in browser.find_element(By.TAG_NAME, "body").text  # the item text, as text


@pytest.mark.parametrize("width", WIDTHS)
def test_a_real_data_set_in_chromium(browser: Any, real: Path, width: int) -> None:
    from selenium.webdriver.common.by import By

    [(page, doc)] = _reports(real / "all")
    assert doc["campaign"]["n_judgments"] == 8000
    _check_report(browser, page, doc, width, "report-real-rte")
    _sorting(browser, "items-table")
    # the page written alone names the command that writes the full lists
    _open(browser, real / "rte.html", width)
    _fits(browser)
    more = browser.find_elements(By.CSS_SELECTOR, "p.more")
    assert more
    assert all("monitor report" in p.text or "download" in p.text for p in more)
