"""Screenshots of the owner's page for docs/ui/: `.venv/bin/python scripts/screenshots.py`.

Starts the console script over HTTP on a small demo root (temp state folder), makes a few
changes through MCP as an agent would, logs headless Chromium in through the printed link
and saves one 1280x800 PNG per view that exists (a view answering 404 is left out).
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.kit import roots_toml  # noqa: E402
from tests.live import call  # noqa: E402
from tests.ui.browser import RealServer, log_in, start_browser, wait_until  # noqa: E402
from tests.ui.test_browser import agent, write_all  # noqa: E402

OUT = ROOT / "docs" / "ui"
VIEWS = {"overview": "/ui/", "activity": "/ui/activity", "changes": "/ui/changes",
         "diff": None, "trash": "/ui/trash", "connect": "/ui/connect"}
DIFF_OF = "src/app.py"  # the diff page shot: this file's kept version against it now
DEMO = {"README.md": "# Demo project\n\nA small tree an agent works in.\n",
        "src/app.py": "def greet(name):\n    return 'hello ' + name\n",
        "notes/todo.txt": "- write tests\n- ship\n",
        "scratch.txt": "a file the agent deletes\n"}
CHANGED = {"src/app.py": "def greet(name: str) -> str:\n    return f'hello {name}'\n",
           "notes/todo.txt": "- write tests\n- review the diff\n- ship\n"}


async def delete(srv: RealServer, path: str, client: str) -> None:
    async with agent(srv, client) as s:
        is_error, answer = await call(s, "delete", path=path)
        assert not is_error, answer


def diff_path(driver: Any, base: str) -> str:
    """The diff page of `DIFF_OF`, by its link in the changes view."""
    driver.get(base + "/ui/changes")
    link = driver.find_element(
        "xpath", f"//tr[.//code[text()='{DIFF_OF}']]//a[text()='diff']")
    return str(link.get_attribute("href")).removeprefix(base)


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="loomfs-shots-"))
    demo = tmp / "demo"
    demo.mkdir()
    cfg = tmp / "roots.toml"
    cfg.write_text(roots_toml(("demo", demo, "workspace"), audit_log=tmp / "audit.log"))
    state = tmp / "state"
    state.mkdir(mode=0o700)
    OUT.mkdir(parents=True, exist_ok=True)
    srv = RealServer(cfg, state)
    driver = start_browser(str(tmp / "profile"))
    try:
        asyncio.run(write_all(srv, DEMO, "claude-code"))
        asyncio.run(write_all(srv, CHANGED, "claude-code", overwrite=True))
        asyncio.run(delete(srv, "scratch.txt", "claude-code"))
        log_in(driver, srv.link)
        for name, where in VIEWS.items():
            path = where or diff_path(driver, srv.base)
            driver.get(srv.base + path)
            wait_until(driver, lambda d: d.execute_script(
                "return document.readyState") == "complete", f"{path} loaded")
            if "Not Found" in driver.title or driver.find_element(
                    "tag name", "body").text.strip() == "Not Found":
                print(f"{path}: not served here, no screenshot", file=sys.stderr)
                continue
            driver.save_screenshot(str(OUT / f"{name}.png"))
            print(f"docs/ui/{name}.png", file=sys.stderr)
    finally:
        driver.quit()
        srv.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
