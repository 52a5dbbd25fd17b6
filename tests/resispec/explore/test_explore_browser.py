"""`resispec explore` in a real browser: headless Chromium (Debian's ``chromium`` + ``chromium-driver``,
installed by .ci/install) driven by Selenium. Serves the app on a free localhost port, sets k = 1 on the
counterexample, checks the displayed laws, and takes a screenshot: into the test's temporary folder, or
over the README's (docs/figures/explore.png) when ``RESISPEC_UPDATE_SCREENSHOT=1`` (so a test run leaves
the tracked files as they were).
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from resispec import VERIFIERS

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOT = ROOT / "docs" / "figures" / "explore.png"
UPDATE_SCREENSHOT = os.environ.get("RESISPEC_UPDATE_SCREENSHOT") == "1"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
pytest.importorskip("panel", reason="the explorer needs the explore extra (panel)")
Image = pytest.importorskip("PIL.Image", reason="the screenshot is shrunk with Pillow (a dependency of bokeh)")
webdriver = pytest.importorskip("selenium.webdriver", reason="the browser test needs selenium (test extra)")
from selenium.webdriver.common.keys import Keys  # noqa: E402  (after the skip: selenium is optional)

pytestmark = pytest.mark.skipif(
    BROWSER is None or DRIVER is None,
    reason="no headless browser: install Debian's chromium and chromium-driver (bash .ci/install does)")

DEEP_QUERY = """
const [selector, start] = arguments, found = [];
(function walk(root) {
  if (root.shadowRoot) walk(root.shadowRoot);
  root.querySelectorAll(selector).forEach(element => found.push(element));
  root.querySelectorAll('*').forEach(element => { if (element.shadowRoot) walk(element.shadowRoot); });
})(start || document);
return found;
"""
"""Every element matching a CSS selector under ``start`` (default: the page), inside Panel's shadow roots too."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.fixture(scope="module")
def page():
    from resispec.explore.server import serve

    port = _free_port()
    server = serve("127.0.0.1", port, open_browser=False, threaded=True)
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        options.add_argument(argument)
    options.binary_location = BROWSER
    driver = None
    try:
        def serving() -> bool:
            try:
                return urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).status == 200
            except OSError:
                return False

        _wait(serving, 60, "the server")
        driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(DRIVER))
        driver.get(f"http://127.0.0.1:{port}/")
        yield driver
    finally:
        if driver is not None:
            driver.quit()
        server.stop()


def _cells(driver) -> dict[str, dict[str, str]]:
    """The numbers table as shown: verifier -> {law, max-error} cell texts (read in one script, so a
    redraw cannot swap the table between two reads)."""
    return driver.execute_script(DEEP_QUERY.replace("return found;", """
        const table = {};
        for (const row of found) {
          const cell = kind => (row.querySelector('td.' + kind) || {textContent: ''}).textContent.trim();
          table[row.dataset.verifier] = {'law': cell('law'), 'max-error': cell('max-error')};
        }
        return table;"""), "tr[data-verifier]")


def _texts(driver, selector: str) -> list[str]:
    """The text of every element matching ``selector`` (of its shadow root, for a Panel pane)."""
    texts = DEEP_QUERY.replace("return found;", "return found.map(e => (e.shadowRoot || e).textContent);")
    return driver.execute_script(texts, selector)


def _click_k(driver, k: int) -> None:
    _wait(lambda: _cells(driver).get("resispec_paper", {}).get("law"), 60, "the numbers table")
    (k_group,) = driver.execute_script(DEEP_QUERY, ".k-choice")
    buttons = driver.execute_script(DEEP_QUERY, "button", k_group)
    (button,) = [button for button in buttons if button.text.strip() == str(k)]
    button.click()


def test_counterexample_at_k_1_shows_the_published_rule_biased_and_the_exact_verifiers_on_p(page, tmp_path):
    _click_k(page, 1)
    expected = "(0.4, 0.48, 0.12)"
    table = _wait(lambda: (cells := _cells(page))["resispec_paper"]["law"] == expected and cells, 30,
                  f"resispec_paper's law to read {expected} at k = 1")
    assert table["resispec_paper"]["max-error"] == "0.18"
    assert _texts(page, ".p-law") == ["(0.4, 0.3, 0.3)"]
    exact = [name for name in table if VERIFIERS[name].claims_exact]
    assert len(exact) >= 7
    for name in exact:
        assert float(table[name]["max-error"]) <= 1e-12, (name, table[name])
        assert table[name]["law"] == "(0.4, 0.3, 0.3)", (name, table[name])
    target = SCREENSHOT if UPDATE_SCREENSHOT else tmp_path / SCREENSHOT.name
    shot = Image.open(io.BytesIO(page.get_screenshot_as_png())).convert("RGB")
    assert shot.size[0] >= 1000 and len(shot.getcolors(1 << 24)) > 2, "the screenshot is blank"
    shot.quantize(256).save(target, optimize=True)


def test_a_typed_edit_is_renormalised_with_a_note_and_redraws(page):
    from resispec.explore.model import State, display
    from resispec.explore.view import numbers_table

    _click_k(page, 1)
    (box,) = page.execute_script(DEEP_QUERY, "input", page.execute_script(DEEP_QUERY, ".q-values")[0])
    box.clear()
    box.send_keys("5, 3, 2" + Keys.ENTER)
    p, q = np.array([0.4, 0.3, 0.3]), np.array([0.5, 0.3, 0.2])
    (paper,) = display(State(p, q, 1, ("resispec_paper",))).verifiers
    expected = numbers_table(display(State(p, q, 1, ("resispec_paper",)))).split('class="law bias">')[1].split("<")[0]
    assert paper.biased and expected != "(0.4, 0.48, 0.12)"
    shown = _wait(lambda: (cells := _cells(page))["resispec_paper"]["law"] == expected and cells, 30,
                  f"resispec_paper's law to read {expected} for q = (.5, .3, .2)")
    assert any("q (draft): renormalised (the values summed to 10)" in text for text in _texts(page, ".note"))
    for name, cells in shown.items():
        if VERIFIERS[name].claims_exact:
            assert float(cells["max-error"]) <= 1e-12, (name, cells)
