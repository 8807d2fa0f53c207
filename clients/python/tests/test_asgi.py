"""End to end: FastAPI and Starlette apps limited by redis_cell.asgi, served by uvicorn on a
loopback port and asked over HTTP. The fields are read as Structured Fields by http_sf; the
keys' state is read from the server."""

from contextlib import asynccontextmanager

import http_sf
import pytest
import redis
import redis.asyncio
from fastapi import Depends, FastAPI
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from conftest import free_port, loads, serve, served
from redis_cell import AsyncClient, Client, Fixed, Lease, Reply, Throttle, Window
from redis_cell.asgi import Limit, RateLimiter, binding, client_address, header, user
from test_topologies import cluster  # noqa: F401  (the fixture: three primaries)

ADDRESS = "127.0.0.1"


def local(port: int) -> redis.asyncio.Redis:
    """A client that fails at once when the server is gone, rather than retrying (redis-py's
    default), so that a failure is seen on the request that meets it."""
    return redis.asyncio.Redis(port=port, retry=Retry(NoBackoff(), 0), socket_connect_timeout=2)


def fastapi_app(client, *limits: Limit, **options) -> FastAPI:
    """GET / behind these limits, on an AsyncClient over ``client``, closed at shutdown."""

    @asynccontextmanager
    async def lifespan(app):
        yield
        await client.aclose()

    limiter = RateLimiter(AsyncClient(client), **options)
    app = FastAPI(lifespan=lifespan)

    @app.get("/", dependencies=[Depends(limiter.limit(*limits))])
    async def index():
        return {"ok": True}

    return app


def draft_11(response):
    """RateLimit-Policy and RateLimit, parsed: lists of (name, parameters), each name a String."""
    policy = http_sf.parse(response.headers["RateLimit-Policy"].encode(), tltype="list")
    limit = http_sf.parse(response.headers["RateLimit"].encode(), tltype="list")
    for name, _ in policy + limit:
        assert type(name) is str, f"{name!r} is not a String"
    return policy, limit


def key(name: str, identity: str = ADDRESS) -> str:
    return f"ratelimit:{name}:{{{identity}}}"


def test_gcra_counts_down_then_answers_429_with_retry_after(server, r, ran):
    app = fastapi_app(local(server), Limit(Throttle("per-address", 15, 30, 60), by=client_address))
    before = ran("cl.all")
    with served(app) as http:
        # The worked example: 16 at once, then one unit every 2 s.
        for i in range(1, 17):
            ok = http.get("/")
            assert ok.status_code == 200
            policy, [(name, state)] = draft_11(ok)
            # 16 units, whole again 32 s after they are spent: q=16;w=32 is 30 a minute.
            assert policy == [("per-address", {"q": 16, "w": 32})]
            assert name == "per-address" and set(state) == {"r", "t"}
            assert state["r"] == 16 - i
            assert 2 * i - 1 <= state["t"] <= 2 * i
            assert "Retry-After" not in ok.headers
        denied = http.get("/")
    assert denied.status_code == 429
    policy, [(name, state)] = draft_11(denied)
    assert (name, state["r"]) == ("per-address", 0)
    assert 1 <= state["t"] <= 2
    assert int(denied.headers["Retry-After"]) == state["t"]
    # One call a request.
    assert ran("cl.all") - before == 17


def test_a_fixed_window_denies_the_fourth_of_three(server, r):
    app = fastapi_app(local(server), Limit(Fixed("per-minute", 3, 60)))
    with served(app) as http:
        answers = [http.get("/") for _ in range(4)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 429]
    assert [draft_11(answer)[1][0][1]["r"] for answer in answers] == [2, 1, 0, 0]
    assert draft_11(answers[0])[0] == [("per-minute", {"q": 3, "w": 60})]
    assert 0 < int(answers[3].headers["Retry-After"]) <= 60
    assert r.get(key("per-minute")) == b"3"


def test_two_limits_of_one_identity_are_charged_together_or_not_at_all(server, r, ran):
    app = fastapi_app(local(server), Limit(Fixed("short", 2, 60)),
                      Limit(Window("long", 100, 3600)))
    before = ran("cl.all")
    with served(app) as http:
        assert [http.get("/").status_code for _ in range(2)] == [200, 200]
        denied = http.get("/")
    assert denied.status_code == 429
    policy, [(name, state)] = draft_11(denied)
    assert policy == [("short", {"q": 2, "w": 60}), ("long", {"q": 100, "w": 3600})]
    assert (name, state["r"]) == ("short", 0)
    # One call a request (counted before the peek below, which the library counts too).
    assert ran("cl.all") - before == 3
    # The denied request took nothing from the long window: two units, not three.
    assert Client(r).window(key("long"), 100, 3600, 0).remaining == 98
    assert r.get(key("short")) == b"2"


def test_the_binding_limit_has_the_fewest_left_for_its_size(server, r):
    app = fastapi_app(local(server), Limit(Fixed("minute", 10, 60)),
                      Limit(Window("hour", 4, 3600, buckets=60)))
    with served(app) as http:
        _, [(name, state)] = draft_11(http.get("/"))
    # 3 of 4 left binds before 9 of 10.
    assert (name, state["r"]) == ("hour", 3)


def test_binding_ties_go_to_the_longest_reset_then_the_first():
    a, b, c = (Limit(Fixed(name, 10, 60)) for name in "abc")
    assert binding([(a, Reply(False, 10, 5, None, 30)), (b, Reply(False, 2, 1, None, 50)),
                    (c, Reply(False, 4, 2, None, 50))])[0] == b
    # Denied: the longest wait, one that never fits longest of all.
    assert binding([(a, Reply(True, 10, 0, 5, 60)), (b, Reply(True, 1, 0, None, 60)),
                    (c, Reply(False, 4, 2, None, 50))])[0] == b


def test_gcra_and_windows_as_quota_and_window():
    assert Limit(Throttle("t", 9, 10, 1)).quota == (10, 1)
    assert Limit(Throttle("t", 15, 30, 60)).quota == (16, 32)
    # 2 units, one every 20 s: whole again in 40 s.
    assert Limit(Throttle("t", 1, 3, 60)).quota == (2, 40)
    # 2 units, one every 1/3 s: 2/3 s, rounded up to a whole second.
    assert Limit(Throttle("t", 1, 3, 1)).quota == (2, 1)
    assert Limit(Window("w", 1000, 86400, buckets=24)).quota == (1000, 86400)
    # A calendar's unit states its longest length: a month of 31 days.
    assert Limit(Fixed("m", 10_000, "MONTH", offset=60)).quota == (10_000, 31 * 86400)
    assert Limit(Fixed("d", 10, "day")).quota == (10, 86400)


def test_a_route_s_limits_are_checked_when_declared():
    # Building a client does no I/O: nothing need listen there.
    limiter = RateLimiter(AsyncClient(local(free_port())))
    with pytest.raises(TypeError, match="Throttle, Fixed or Window"):
        Limit(Lease("pool", 3, 60))
    with pytest.raises(ValueError, match="letters, digits"):
        Limit(Fixed("per minute", 3, 60))
    with pytest.raises(ValueError, match="each policy once"):
        limiter.limit(Limit(Fixed("a", 3, 60)), Limit(Window("a", 3, 60)))
    with pytest.raises(ValueError, match="period is an integer"):
        Limit(Fixed("monthly", 3, "MONTHS"))
    with pytest.raises(ValueError, match="calendar period keeps to the calendar"):
        Limit(Fixed("monthly", 3, "MONTH", align=True))
    with pytest.raises(ValueError, match="offset moves a grid"):
        Limit(Fixed("hourly", 3, 3600, offset=60))
    with pytest.raises(ValueError, match="-1439 to 1439"):
        Limit(Fixed("hourly", 3, 3600, align=True, offset=1440))
    with pytest.raises(ValueError, match="standard_headers"):
        RateLimiter(limiter.cell, standard_headers="draft-9")


def test_a_later_identity_s_denial_gives_back_the_earlier_s_units(server, r, ran):
    app = fastapi_app(local(server), Limit(Fixed("per-address", 5, 60), by=client_address),
                      Limit(Fixed("per-key", 1, 60), by=header("X-API-Key")))
    before = ran("cl.all")
    with served(app) as http:
        assert http.get("/", headers={"X-API-Key": "k1"}).status_code == 200
        denied = http.get("/", headers={"X-API-Key": "k1"})
        anonymous = http.get("/")
    assert denied.status_code == 429
    assert draft_11(denied)[1][0][0] == "per-key"
    # Taken on the address, then given back when the key denied.
    assert r.get(key("per-address")) == b"2"  # the first request's and the anonymous one's
    assert r.get(key("per-key", "k1")) == b"1"
    # 2 calls, then 2 and a refund, then 1: each identity's limits in a call of their own.
    assert ran("cl.all") - before == 6
    # Without a key, the key's limit does not apply, and is not stated.
    assert anonymous.status_code == 200
    assert draft_11(anonymous)[0] == [("per-address", {"q": 5, "w": 60})]


def test_an_earlier_identity_s_denial_leaves_the_later_unasked(server, r, ran):
    app = fastapi_app(local(server), Limit(Fixed("per-address", 1, 60), by=client_address),
                      Limit(Fixed("per-key", 5, 60), by=header("X-API-Key")))
    before = ran("cl.all")
    with served(app) as http:
        assert http.get("/", headers={"X-API-Key": "k1"}).status_code == 200
        denied = http.get("/", headers={"X-API-Key": "k1"})
    assert denied.status_code == 429
    assert draft_11(denied)[1][0][0] == "per-address"
    assert r.get(key("per-key", "k1")) == b"1"
    assert ran("cl.all") - before == 3


def test_an_identity_s_braces_cannot_split_its_keys(server, r):
    app = fastapi_app(local(server), Limit(Fixed("a", 5, 60), by=header("X-API-Key")),
                      Limit(Fixed("b", 5, 60), by=header("X-API-Key")))
    with served(app) as http:
        assert http.get("/", headers={"X-API-Key": "}x{%"}).status_code == 200
    assert sorted(r.keys()) == [b"ratelimit:a:{%7Dx%7B%25}", b"ratelimit:b:{%7Dx%7B%25}"]


def test_fail_closed_answers_503_when_the_server_stops(flavor):
    redis_server = serve(loads(flavor))
    port = next(redis_server)
    app = fastapi_app(local(port), Limit(Fixed("per-minute", 3, 60)))
    with served(app) as http:
        assert http.get("/").status_code == 200
        redis_server.close()
        refused = http.get("/")
    assert refused.status_code == 503
    assert "RateLimit" not in refused.headers and "Retry-After" not in refused.headers


def test_fail_open_lets_requests_through_when_the_server_is_unreachable():
    # Nothing listens there.
    app = fastapi_app(local(free_port()), Limit(Fixed("per-minute", 1, 60)), fail_open=True)
    with served(app) as http:
        answers = [http.get("/") for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert not any("RateLimit" in answer.headers for answer in answers)


def test_fail_closed_is_the_default_when_the_server_is_unreachable():
    app = fastapi_app(local(free_port()), Limit(Fixed("per-minute", 1, 60)))
    with served(app) as http:
        assert http.get("/").status_code == 503


class NamedUser(AuthenticationBackend):
    """``Authorization: user <name>``, trusted: a test's users."""

    async def authenticate(self, conn):
        scheme, _, name = conn.headers.get("Authorization", "").partition(" ")
        if scheme == "user" and name:
            return AuthCredentials(["authenticated"]), SimpleUser(name)
        return None


def test_starlette_wraps_an_endpoint_with_the_older_fields(server, r):
    client = local(server)
    limiter = RateLimiter(AsyncClient(client), standard_headers="draft-6", legacy_headers=True)
    per_user = limiter.limit(Limit(Fixed("per-user", 2, 60), by=user))

    def index(request):  # sync: Starlette's threadpool
        return PlainTextResponse("ok")

    @asynccontextmanager
    async def lifespan(app):
        yield
        await client.aclose()

    app = Starlette(routes=[Route("/", per_user.wrap(index))], lifespan=lifespan,
                    middleware=[Middleware(AuthenticationMiddleware, backend=NamedUser())])
    alice = {"Authorization": "user alice"}
    with served(app) as http:
        answers = [http.get("/", headers=alice) for _ in range(3)]
        bob = http.get("/", headers={"Authorization": "user bob"})
        anonymous = http.get("/")
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert [answer.headers["RateLimit-Remaining"] for answer in answers] == ["1", "0", "0"]
    assert [answer.headers["X-RateLimit-Remaining"] for answer in answers] == ["1", "0", "0"]
    for answer in answers:
        assert http_sf.parse(answer.headers["RateLimit-Policy"].encode(), tltype="list") == [
            (2, {"w": 60})]
        assert answer.headers["RateLimit-Limit"] == answer.headers["X-RateLimit-Limit"] == "2"
        assert 0 < int(answer.headers["RateLimit-Reset"]) <= 60
        assert "RateLimit" not in answer.headers
    assert answers[2].headers["Retry-After"] == answers[2].headers["RateLimit-Reset"]
    assert (bob.status_code, bob.headers["RateLimit-Remaining"]) == (200, "1")
    assert anonymous.status_code == 200 and "RateLimit-Limit" not in anonymous.headers
    assert r.get(key("per-user", "alice")) == b"2"


def test_draft_7_sends_one_dictionary(server):
    app = fastapi_app(local(server), Limit(Fixed("per-minute", 3, 60)), standard_headers="draft-7")
    with served(app) as http:
        ok = http.get("/")
    state = http_sf.parse(ok.headers["RateLimit"].encode(), tltype="dictionary")
    assert {name: value for name, (value, _) in state.items() if name != "reset"} == {
        "limit": 3, "remaining": 2}
    assert 0 < state["reset"][0] <= 60


def test_a_cluster_decides_each_identity_on_its_own_node(cluster, flavor):  # noqa: F811
    client = redis.asyncio.RedisCluster(host=ADDRESS, port=cluster[0])
    # The key's limit first, so that the address's denial has something to give back.
    app = fastapi_app(client, Limit(Window("per-key", 3, 60), by=header("X-API-Key")),
                      Limit(Throttle("burst", 1, 1, 60)), Limit(Fixed("per-minute", 5, 60)))
    with served(app) as http:
        answers = [http.get("/", headers={"X-API-Key": "k1"}) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert draft_11(answers[2])[1][0][0] == "burst"
    nodes = redis.RedisCluster(host=ADDRESS, port=cluster[0])
    try:
        # The key's window was given back when the address's burst denied.
        assert Client(nodes).window(key("per-key", "k1"), 3, 60, 0).remaining == 1
        assert nodes.get(key("per-minute")) == b"2"
    finally:
        nodes.close()


def test_a_policy_is_one_limiter_and_one_identity_across_routes():
    # The key names neither: a route counting the policy by another identity could spend a
    # victim's units, and one with other numbers would find a key of another shape.
    limiter = RateLimiter(AsyncClient(redis.asyncio.Redis(port=1)))
    limiter.limit(Limit(Fixed("shared", 5, 60)))
    limiter.limit(Limit(Fixed("shared", 5, 60)))
    with pytest.raises(ValueError, match="declared already"):
        limiter.limit(Limit(Fixed("shared", 5, 60), by=header("X-API-Key")))
    with pytest.raises(ValueError, match="declared already"):
        limiter.limit(Limit(Fixed("shared", 6, 60)))


@pytest.mark.parametrize("limiter", [Throttle("t", -1, 1, 1), Throttle("t", 1, 0, 1), Fixed("f", 0, 60),
                                     Fixed("f", 1, 1.5), Window("w", 1, 60, buckets=7),
                                     Window("w", 1, 60, buckets=1), Fixed("f", True, 60)])
def test_numbers_the_server_would_refuse_are_refused_where_the_route_is_declared(limiter):
    with pytest.raises(ValueError):
        Limit(limiter)


def test_the_hook_is_told_what_a_request_was_charged_on_or_what_denied_it(server):
    told = []
    app = fastapi_app(local(server), Limit(Fixed("per-address", 5, 60), by=client_address),
                      Limit(Fixed("burst", 2, 60), by=client_address),
                      Limit(Fixed("per-key", 1, 60), by=header("X-API-Key")),
                      on_decision=told.append)
    with served(app) as http:
        assert http.get("/", headers={"X-API-Key": "k1"}).status_code == 200
        # Denied on the key, after the address's limits admitted and gave their units back.
        assert http.get("/", headers={"X-API-Key": "k1"}).status_code == 429
        # Denied on the burst, in one call with the address's limit, which took nothing.
        assert http.get("/").status_code == 200
        assert http.get("/").status_code == 429
    assert [(each.limiter, each.key, each.allowed) for each in told] == [
        ("per-address", ADDRESS, True), ("burst", ADDRESS, True), ("per-key", "k1", True),
        ("per-key", "k1", False),
        ("per-address", ADDRESS, True), ("burst", ADDRESS, True),
        ("burst", ADDRESS, False)]
    assert told[-1].reply.limited and told[-1].reply.limit == 2


def test_a_coroutine_is_no_hook(server):
    async def hook(decided):
        pass

    with pytest.raises(TypeError, match="plain function"):
        RateLimiter(AsyncClient(local(server)), on_decision=hook)
    with pytest.raises(TypeError, match="plain function"):
        AsyncClient(local(server), on_decision=hook)
