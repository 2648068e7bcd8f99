"""Headless Chromium driven by Selenium, for the owner's page, and the real server it opens.

`browser` is a module-scoped fixture (one Chromium per test module: starting one costs
about a second). Its console log is kept (`goog:loggingPrefs`), so a test asserts that no
Content-Security-Policy violation was reported (`csp_violations`). Without chromium or
chromedriver the tests are skipped with a message, except under `CI=true`, where that
fails. `RealServer` runs the console script over HTTP and reads its printed login link.
Every wait is bounded (`WAIT` seconds).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.live import env_without_loomfs, free_port
from tests.ui.uikit import Spawned

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
EXE = str(Path(sys.executable).parent / "loom-fs-mcp")
URL = r"http://127\.0\.0\.1:\d+/ui/login\?code=[A-Za-z0-9_.-]+"
LINK = re.compile(f"owner's page: ({URL})")
WAIT = 20.0
WINDOW = (1280, 800)
CSP_SIGNS = ("Content Security Policy", "Refused to")
WATCH = ("window.__csp = []; document.addEventListener('securitypolicyviolation', "
         "e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));")


def missing() -> str | None:
    """Why no browser test can run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            return f"{path} is not installed (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    return None


def start_browser(profile: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
                "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    # Every page records the CSP violations it sees (the driver's script runs before the
    # page's, outside its policy), since the console does not report each of them.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium for the module (skipped, or failed under CI=true, without it)."""
    why = missing()
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run under CI=true: {why}")
        pytest.skip(f"browser tests skipped: {why}")
    profile = tempfile.mkdtemp(prefix="loomfs-chromium-")
    began = time.monotonic()
    driver = start_browser(profile)
    driver.started_in = time.monotonic() - began
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console(driver: Any) -> list[str]:
    """The browser console's messages since the last call (the log is drained)."""
    return [str(e.get("message", "")) for e in driver.get_log("browser")]


def csp_violations(messages: list[str], driver: Any = None) -> list[str]:
    """The CSP violations among the console's `messages`, and those the page of `driver`
    recorded (its `securitypolicyviolation` events)."""
    seen = [m for m in messages if any(sign in m for sign in CSP_SIGNS)]
    if driver is not None:
        seen += [str(v) for v in driver.execute_script("return window.__csp || []")]
    return seen


def wait_until(driver: Any, predicate: Any, what: str, deadline: float = WAIT) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, deadline, poll_frequency=0.1).until(predicate, what)


class RealServer(Spawned):
    """`loom-fs-mcp --config CFG --transport http --port P`, its stderr read as it comes;
    `link` is the login link it printed, `token` the MCP token it made."""

    def __init__(self, config: Path, state: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.state = state
        self.config = config
        super().__init__(
            "--config", str(config), "--transport", "http", "--port", str(self.port),
            env=env_without_loomfs(XDG_STATE_HOME=str(state)))
        self.link = self.wait_for(LINK).group(1)
        self.token = (state / "loom-fs-mcp" / "token").read_text().strip()


def fresh_link(srv: RealServer) -> str:
    """A new login link for `srv`, from `loom-fs-mcp --ui-link` as the person runs it."""
    out = subprocess.run([EXE, "--config", str(srv.config), "--ui-link", "--port", str(srv.port)],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                         env=env_without_loomfs(XDG_STATE_HOME=str(srv.state)))
    found = re.search(URL, out.stdout + out.stderr)
    assert found, out.stdout + out.stderr
    return found.group(0)


def log_in(driver: Any, link: str) -> None:
    """Open a login link in the browser: it logs in and lands on the overview."""
    driver.get(link)
    wait_until(driver, lambda d: d.current_url.rstrip("/").endswith("/ui"), "landed on /ui/")
