"""Fair shares of the workers (NOTE [fair shares] in gradtrace/api/fairshare.py): the turns
themselves on an event loop, then the real service with one client flooding it."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from api.helpers import CHAIN_RULE
from conftest import Server
from gradtrace.api.fairshare import FairShare
from gradtrace.errors import PoolSaturated, RateLimited


def _share(capacity: int = 2, per_client: int = 1, queue_size: int = 16) -> FairShare:
    return FairShare(per_client=per_client, queue_size=queue_size, retry_after_s=5.0, capacity=lambda: capacity)


def test_turns_go_round_robin_and_each_client_stays_under_its_cap() -> None:
    async def scenario() -> list[str]:
        fair = _share(capacity=2, per_client=1)
        release: dict[str, asyncio.Event] = {}
        order: list[str] = []

        async def job(client: str, name: str) -> None:
            async with fair.turn(client):
                order.append(name)
                assert fair.running[client] <= 1 and fair.total_running <= 2
                release[name] = asyncio.Event()
                await release[name].wait()

        tasks = [asyncio.create_task(job("flood", f"f{i}")) for i in range(2)]
        await asyncio.sleep(0)
        tasks += [asyncio.create_task(job(c, c)) for c in ("a", "b", "c")]
        for _ in range(5):
            await asyncio.sleep(0)
        assert order == ["f0", "a"]  # flood's second waits although a worker was free for it first
        for name in ("a", "f0", "b", "c", "f1"):
            while name not in release:
                await asyncio.sleep(0)
            release[name].set()
            await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        assert fair.total_running == 0 and fair.total_waiting == 0
        return order

    order = asyncio.run(scenario())
    # the flood's second job waits behind the clients that had no turn yet
    assert order[:2] == ["f0", "a"] and order.index("f1") > order.index("b")


def test_a_client_at_its_cap_with_a_full_queue_of_its_own_gets_429_with_retry_after() -> None:
    async def scenario() -> None:
        fair = _share(capacity=2, per_client=1)
        hold = asyncio.Event()

        async def job() -> None:
            async with fair.turn("flood"):
                await hold.wait()

        running, waiting = asyncio.create_task(job()), asyncio.create_task(job())
        await asyncio.sleep(0)
        with pytest.raises(RateLimited) as refused:
            async with fair.turn("flood"):
                pass
        assert refused.value.retry_after == 5.0 and refused.value.detail == {"running": 1, "waiting": 1, "cap": 1}
        async with fair.turn("other"):  # someone else still gets the free worker at once
            pass
        hold.set()
        await asyncio.gather(running, waiting)

    asyncio.run(scenario())


def test_a_cancelled_wait_gives_its_place_back_and_a_full_queue_is_503() -> None:
    async def scenario() -> None:
        fair = _share(capacity=1, per_client=2, queue_size=1)
        hold = asyncio.Event()

        async def job(client: str) -> None:
            async with fair.turn(client):
                await hold.wait()

        first = asyncio.create_task(job("a"))
        await asyncio.sleep(0)
        second = asyncio.create_task(job("b"))
        await asyncio.sleep(0)
        with pytest.raises(PoolSaturated):
            async with fair.turn("c"):
                pass
        second.cancel()
        await asyncio.gather(second, return_exceptions=True)
        assert fair.total_waiting == 0
        hold.set()
        await first
        assert fair.total_running == 0

    asyncio.run(scenario())


SPIN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"


def test_a_flooding_client_waits_its_turn_or_gets_429_while_others_run(start_server: Any) -> None:
    env = {"GRADTRACE_WORKERS": "2", "GRADTRACE_CLIENT_JOBS": "1", "GRADTRACE_CLIENT_HEADER": "X-API-Key",
           "GRADTRACE_TIMEOUT_S": "30", "GRADTRACE_CPU_S": "30"}
    srv: Server
    with start_server(env) as srv:
        answers: list[httpx.Response] = []

        def flood() -> None:
            with httpx.Client(base_url=srv.url, timeout=60, headers={"X-API-Key": "flood"}) as c:
                answers.append(c.post("/api/runs", json={"code": SPIN.format(s=8)}))

        threads = [threading.Thread(target=flood) for _ in range(3)]
        for t in threads:
            t.start()
        with srv.client(headers={"X-API-Key": "ordinary"}) as c:
            deadline = time.monotonic() + 30
            while not any(a.status_code == 429 for a in answers):  # the third spin is refused at once
                assert time.monotonic() < deadline, [a.status_code for a in answers]
                time.sleep(0.05)
            mine = c.post("/api/runs", json={"code": CHAIN_RULE})
            flood_done = [a.status_code for a in answers if a.status_code != 429]
        for t in threads:
            t.join(60)
        assert mine.status_code == 200 and mine.json()["status"] == "ok"
        # One worker stayed free for the other client: its run was answered while the flood's
        # first spin (8 s) still held the other worker, not once a spin freed it.
        assert flood_done == [], flood_done
        codes = sorted(a.status_code for a in answers)
        assert codes == [200, 200, 429], codes
        refused = next(a for a in answers if a.status_code == 429)
        assert int(refused.headers["retry-after"]) >= 1
        assert refused.json()["error"]["code"] == "rate_limited"
        assert all(a.json()["status"] == "ok" for a in answers if a.status_code == 200)


def test_the_default_cap_is_half_the_workers_the_runner_has_now() -> None:
    workers = [2]
    fair = FairShare(per_client=None, queue_size=4, retry_after_s=1.0, capacity=lambda: workers[0])
    assert fair.per_client == 1
    workers[0] = 5  # a queue worker registered more slots
    assert fair.per_client == 3
    assert FairShare(per_client=0, queue_size=4, retry_after_s=1.0, capacity=lambda: 8).per_client == 0


def test_no_fair_shares_lets_every_job_through_to_the_runners_own_queue() -> None:
    async def scenario() -> None:
        fair = _share(capacity=1, per_client=0, queue_size=0)
        async with fair.turn("a"), fair.turn("a"), fair.turn("b"):  # nothing waits here, nothing refused
            assert fair.total_running == 0 and fair.total_waiting == 0

    asyncio.run(scenario())
