"""The front door's rules as functions (issue 28): which Host names and Origins a server
bound to an address answers to, when --no-auth is allowed, and the token bucket's
arithmetic on a test clock. (Against real server processes:
tests/integration/test_http_door.py.)"""

from __future__ import annotations

import pytest

from streamjob.api.door import FrontDoor, FrontDoorMiddleware, check_no_auth, host_name
from streamjob.api.limits import RateLimiter

pytestmark = pytest.mark.unit


def test_host_names_a_server_answers_to():
    loop = FrontDoor("127.0.0.1")
    assert all(loop.host_allowed(h) for h in ("127.0.0.1:8080", "localhost:8080", "LOCALHOST",
                                              "[::1]:8080"))
    assert not any(loop.host_allowed(h) for h in ("attacker.example:8080", "10.0.0.5:8080",
                                                  "127.0.0.1.attacker.example", "", None))
    named = FrontDoor("10.0.0.5", names=frozenset({"Jobs.Example.COM"}))
    assert named.host_allowed("jobs.example.com") and named.host_allowed("10.0.0.5:443")
    assert not named.host_allowed("localhost:8080")  # not a loopback bind
    every = FrontDoor("0.0.0.0")
    assert every.host_allowed("192.168.1.20:8080") and every.host_allowed("[fe80::1]:80")
    assert not every.host_allowed("attacker.example")
    assert host_name("[::1]:8080") == "::1" and host_name("Example.COM:80") == "example.com"
    assert host_name("::1") == "::1"


def test_origins_content_types_and_bodies():
    door = FrontDoorMiddleware(None, FrontDoor("127.0.0.1", max_body_bytes=10))
    own = {"host": "127.0.0.1:8080", "content-type": "application/json; charset=utf-8"}
    assert door.refusal("POST", own) is None
    assert door.refusal("POST", {**own, "origin": "http://127.0.0.1:8080"}) is None
    for origin in ("http://attacker.example", "null", "http://127.0.0.1:3000", "file://"):
        status, body = door.refusal("GET", {**own, "origin": origin})
        assert status == 403 and b"ForeignOrigin" in body
    for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data", None):
        headers = {"host": "127.0.0.1:8080", **({"content-type": kind} if kind else {})}
        assert door.refusal("POST", headers)[0] == 415
    assert door.refusal("DELETE", {"host": "127.0.0.1:8080"}) is None
    assert door.refusal("POST", {**own, "content-length": "11"})[0] == 413


def test_no_auth_only_on_loopback():
    for host in ("127.0.0.1", "127.1.2.3", "::1", "localhost"):
        check_no_auth(host)
        assert FrontDoor(host, no_auth=True).no_auth
    for host in ("0.0.0.0", "::", "10.0.0.5", "jobs.example.com", ""):
        with pytest.raises(ValueError, match="only on a loopback address"):
            FrontDoor(host, no_auth=True)


def test_the_token_bucket():
    now = [0.0]
    limiter = RateLimiter(2.0, 3, clock=lambda: now[0])
    assert [limiter.take("a") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("a") == pytest.approx(0.5)  # one request back in 1/rate s
    assert limiter.take("b") == 0.0  # another key, another bucket
    now[0] = 0.5
    assert limiter.take("a") == 0.0 and limiter.take("a") > 0
    now[0] = 100.0
    assert [limiter.take("a") for _ in range(4)][-1] > 0  # refills up to the burst only
    assert RateLimiter.retry_after(0.2) == "1" and RateLimiter.retry_after(2.1) == "3"
    with pytest.raises(ValueError):
        RateLimiter(0, 1)
