"""Who gets into the owner's page, and what a POST needs (docs/owner-page.md, "Who gets in").

Over real HTTP against a live server. Every refusal is checked to have changed nothing:
the session stays logged in (or out) as it was.
"""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.ui.headers import HEADERS
from app.ui.owner import CODE_TTL, FAILURES_ALLOWED, OwnerKeys, login_link, make_code
from app.ui.sessions import COOKIE
from tests.ui.uikit import SECRET, TOKEN, Owner, code, ui_server


@pytest.fixture
def srv(tmp_path: Path):
    with ui_server(tmp_path) as s:
        yield s


def logged_in(http: httpx.Client) -> bool:
    return http.get("/ui/").status_code == 200


def test_the_page_without_a_session_answers_401_saying_how_to_get_a_link(srv) -> None:
    r = httpx.get(f"{srv.base}/ui/")
    assert r.status_code == 401
    assert "--ui-link" in r.text


def test_the_mcp_token_does_not_open_the_page(srv) -> None:
    r = httpx.get(f"{srv.base}/ui/", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 401


def test_the_pages_cookie_does_not_open_mcp(srv) -> None:
    owner = Owner(srv)
    cookie = owner.http.cookies.get(COOKIE)
    assert cookie
    r = httpx.post(f"{srv.url}", headers={"Cookie": f"{COOKIE}={cookie}",
                                          "Accept": "application/json, text/event-stream",
                                          "Content-Type": "application/json"}, json={})
    assert r.status_code == 401


def test_a_code_logs_in_once_and_sets_a_strict_httponly_cookie(srv) -> None:
    once = code()
    with httpx.Client(base_url=srv.base) as http:
        r = http.get("/ui/login", params={"code": once})
        assert r.status_code == 303 and r.headers["location"] == "/ui/"
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "path=/ui" in cookie
        assert logged_in(http)
    with httpx.Client(base_url=srv.base) as other:
        again = other.get("/ui/login", params={"code": once})
        assert again.status_code == 401 and "already used" in again.text
        assert not logged_in(other)


def _expired() -> str:
    return make_code(SECRET, now=time.time() - CODE_TTL - 5)


def _forged() -> str:
    expires, nonce, mac = code().split(".")
    return f"{expires}.{nonce}.{'A' * len(mac)}"


def _other_secret() -> str:
    return make_code(b"another-secret-entirely-0123456789")


def _later() -> str:
    parts = code().split(".")
    return f"{int(parts[0]) + 3600}.{parts[1]}.{parts[2]}"


@pytest.mark.parametrize("bad, why", [
    (_expired, "expired"),
    (_forged, "not valid"),
    (_other_secret, "not valid"),
    (_later, "not valid"),  # its expiry moved: the MAC no longer matches
    (lambda: "", "not valid"),
    (lambda: "x" * 4000, "not valid"),
    (lambda: "1.2", "not valid"),
    (lambda: "１２３.a.b", "not valid"),  # full-width digits are digits to isdigit()
    (lambda: "../../etc/passwd", "not valid"),
])
def test_a_bad_code_is_refused_and_logs_nobody_in(srv, bad, why) -> None:
    with httpx.Client(base_url=srv.base) as http:
        r = http.get("/ui/login", params={"code": bad()})
        assert r.status_code == 401 and why in r.text
        assert COOKIE not in http.cookies
        assert not logged_in(http)


def test_failed_logins_are_rate_limited_even_for_a_right_code(srv) -> None:
    with httpx.Client(base_url=srv.base) as http:
        for _ in range(FAILURES_ALLOWED):
            assert http.get("/ui/login", params={"code": _forged()}).status_code == 401
        r = http.get("/ui/login", params={"code": code()})
        assert r.status_code == 429 and "too many" in r.text
        assert not logged_in(http)


def test_the_rate_limit_moves_on_with_its_window() -> None:
    now = [1000.0]
    keys = OwnerKeys(SECRET, clock=time.time, monotonic=lambda: now[0])
    for _ in range(FAILURES_ALLOWED):
        assert keys.take("nope") is not None
    assert keys.take(make_code(SECRET)) == (
        "too many failed logins: wait a minute, then use a fresh link")
    now[0] += 61
    assert keys.take(make_code(SECRET)) is None


@pytest.mark.parametrize("host,opened", [
    ("127.0.0.1", "http://127.0.0.1:8000/"),
    ("localhost", "http://localhost:8000/"),
    ("0.0.0.0", "http://127.0.0.1:8000/"),  # every address (a container): open this one
    ("::", "http://127.0.0.1:8000/"),
    ("[::]", "http://127.0.0.1:8000/"),
    ("::1", "http://[::1]:8000/"),
])
def test_the_printed_link_is_an_address_the_person_can_open(host, opened) -> None:
    link = login_link(SECRET, host, 8000)
    assert link.startswith(opened + "ui/login?code=")
    assert OwnerKeys(SECRET).take(link.split("code=", 1)[1]) is None


def test_a_code_of_another_process_with_the_same_secret_logs_in() -> None:
    """`--ui-link` is another process: what it prints works on the serving one."""
    printed = OwnerKeys(SECRET).code()
    assert OwnerKeys(SECRET).take(printed) is None


@pytest.mark.parametrize("csrf, origin, status", [
    ("", "same", 403),  # no CSRF token
    ("wrong-token", "same", 403),
    (None, None, 403),  # no Origin
    (None, "http://127.0.0.1:1", 403),  # another loopback port is another origin
    (None, "http://evil.example", 403),  # the Host/Origin guard answers first
    (None, "null", 403),
])
def test_a_post_without_its_csrf_token_or_from_elsewhere_changes_nothing(
        srv, csrf, origin, status) -> None:
    owner = Owner(srv)
    r = owner.post("/ui/logout", {}, csrf=csrf, origin=origin)
    assert r.status_code == status
    assert logged_in(owner.http)  # still logged in: the logout did not happen


def test_a_post_from_the_page_with_its_token_acts(srv) -> None:
    owner = Owner(srv)
    r = owner.post("/ui/logout", {})
    assert r.status_code == 303
    assert not logged_in(owner.http)


def test_a_post_with_a_cross_site_fetch_marker_is_refused(srv) -> None:
    owner = Owner(srv)
    token = owner.csrf()
    r = owner.http.post("/ui/logout", data={"csrf": token},
                        headers={"Origin": srv.base, "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert logged_in(owner.http)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example"])
@pytest.mark.parametrize("path", ["/ui/", "/ui/login?code=x", "/ui/static/ui.js"])
def test_a_rebinding_host_is_refused(srv, host, path) -> None:
    r = httpx.get(f"{srv.base}{path}", headers={"Host": host})
    assert r.status_code == 421


PATHS = ["/ui/", "/ui/login?code=nope", "/ui/static/ui.js", "/ui/static/ui.css",
         "/ui/static/missing.js", "/ui/nothing-here"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("who", ["nobody", "owner"])
def test_every_answer_carries_the_security_headers(srv, path, who) -> None:
    if who == "owner":
        r = Owner(srv).get(path)
    else:
        with httpx.Client(base_url=srv.base) as http:
            r = http.get(path)
    for name, value in HEADERS:
        assert r.headers.get(name.decode()) == value.decode(), (path, name)


def test_the_csp_allows_no_inline_script_and_no_framing() -> None:
    csp = dict(HEADERS)[b"content-security-policy"].decode()
    directives = {d.split()[0]: d.split()[1:] for d in csp.split("; ")}
    assert directives["default-src"] == ["'self'"]
    assert directives["script-src"] == ["'self'"]
    assert directives["frame-ancestors"] == ["'none'"]
    assert directives["base-uri"] == ["'none'"]
    assert directives["form-action"] == ["'self'"]
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp


def test_the_owners_login_is_audited_as_the_owner(srv, tmp_path) -> None:
    Owner(srv)
    log = (tmp_path / "audit.log").read_text()
    assert "op=owner_login client=owner" in log


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_no_text_but_a_code_made_with_the_secret_logs_in(text: str) -> None:
    keys = OwnerKeys(SECRET, monotonic=lambda: 0.0)
    keys.failures.failed = lambda: None  # type: ignore[method-assign]  # no rate limit here
    assert keys.take(text) is not None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_code_changed_in_any_one_character_is_refused(data: st.DataObject) -> None:
    keys = OwnerKeys(SECRET)
    good = make_code(SECRET)
    at = data.draw(st.integers(0, len(good) - 1))
    other = data.draw(st.characters(codec="ascii").filter(lambda c: c != good[at]))
    assert keys.take(good[:at] + other + good[at + 1:]) is not None
    assert keys.take(good) is None  # the unchanged code still works, once
