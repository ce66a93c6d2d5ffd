"""Fair shares of the workers: a per-client cap on running jobs, and a fair queue.

NOTE [fair shares]
    The rate limit (``ratelimit.py``) counts requests, not worker time: a client sending
    5-second spins held half the workers within its budget, and everyone else queued behind it.
    So before a job of any kind reaches the runner (the local pool or the queue: the gate sits
    in ``api/jobs.run_unless_client_leaves``, in front of both) it takes a turn here:

    * a client (its API key header when ``GRADTRACE_CLIENT_HEADER`` names one, else its address)
      runs at most ``GRADTRACE_CLIENT_JOBS`` jobs at once (default: half the workers, rounded
      up; 0 turns fair shares off: every job goes straight to the runner, whose own bounded queue
      answers 503 when full, as before fair shares existed — with runner=queue that keeps the
      one atomic bound across replicas, NOTE [hard queue bound] in ``queue/admission.py``);
    * at most as many jobs run as the runner has workers; the others wait here, and when a
      worker frees, the next turn goes to the next client in round-robin order that has a job
      waiting and is under its cap (one FIFO queue per client), not to whoever came first;
    * a client at its cap with as many jobs again already waiting is refused at once with 429
      and ``Retry-After`` (the wall-clock limit: by then one of its jobs has ended); when
      ``GRADTRACE_QUEUE_SIZE`` jobs wait in all, the answer is 503 as before.

    With runner=queue each API replica keeps its own turns: a client is capped per replica, and
    capacity is the workers' slots as the registry shows them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable

from fastapi import Request

from gradtrace.errors import PoolSaturated, RateLimited

CLIENT_KEY_HEX = 16
"""Hex digits kept of a client's API key hash: enough to tell keys apart, never the key itself."""


def client_id(request: Request, header: str | None) -> str:
    """Who is asking: a hash of the ``header`` value when there is one, else the address."""
    if header:
        value = request.headers.get(header)
        if value:
            return "key:" + hashlib.sha256(value.encode("utf-8", "replace")).hexdigest()[:CLIENT_KEY_HEX]
    return request.client.host if request.client else "unknown"


class FairShare:
    """Turns on the workers (NOTE [fair shares]); one per process, used from the event loop."""

    def __init__(self, *, per_client: int | None, queue_size: int, retry_after_s: float,
                 capacity: Callable[[], int]) -> None:
        """``per_client`` None: half of ``capacity()`` (the runner's workers now), rounded up."""
        self._per_client = per_client
        self.queue_size = queue_size
        self.retry_after_s = retry_after_s
        self.capacity = capacity
        self.running: dict[str, int] = {}
        self._waiting: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @property
    def per_client(self) -> int:
        """The cap on one client's running jobs now (0: none)."""
        if self._per_client is not None:
            return self._per_client
        return max(1, math.ceil(self.capacity() / 2))

    @property
    def total_running(self) -> int:
        return sum(self.running.values())

    @property
    def total_waiting(self) -> int:
        return sum(len(q) for q in self._waiting.values())

    def _under_cap(self, client: str) -> bool:
        return not self.per_client or self.running.get(client, 0) < self.per_client

    @contextlib.asynccontextmanager
    async def turn(self, client: str) -> AsyncIterator[None]:
        """Wait for ``client``'s turn (or be refused), hold it while the job runs, give it back."""
        capacity = self.capacity()
        if capacity <= 0 or not self.per_client:  # no worker known, or no fair shares: the runner's
            yield                                  # own queue bounds the job (503 when full)
            return
        if self._under_cap(client) and self.total_running < capacity and client not in self._waiting:
            self._grant(client)
        else:
            await self._wait(client)
        try:
            yield
        finally:
            self.running[client] -= 1
            if not self.running[client]:
                del self.running[client]
            self._dispatch()

    async def _wait(self, client: str) -> None:
        mine = self._waiting.get(client)
        if self.per_client and mine is not None and len(mine) >= self.per_client:
            raise RateLimited(
                f"this client already runs {self.running.get(client, 0)} jobs and has {len(mine)} waiting, "
                f"its share of the workers; retry in {math.ceil(self.retry_after_s)} s",
                retry_after=self.retry_after_s,
                detail={"running": self.running.get(client, 0), "waiting": len(mine), "cap": self.per_client})
        if self.total_waiting >= self.queue_size:
            raise PoolSaturated(f"all workers are busy and {self.total_waiting} runs are waiting; "
                                "please retry shortly", retry_after=self.retry_after_s)
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(turn)
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # granted, then cancelled: hand it on
                self.running[client] -= 1
                if not self.running[client]:
                    del self.running[client]
            else:
                queue = self._waiting.get(client)
                if queue is not None and turn in queue:
                    queue.remove(turn)
                    if not queue:
                        del self._waiting[client]
            self._dispatch()
            raise

    def _grant(self, client: str) -> None:
        self.running[client] = self.running.get(client, 0) + 1

    def _dispatch(self) -> None:
        """Hand free workers to waiting clients, round-robin, each under its cap."""
        capacity = self.capacity()
        while self.total_running < capacity:
            client = next((c for c in self._waiting if self._under_cap(c)), None)
            if client is None:
                return
            queue = self._waiting.pop(client)  # re-inserted last: the next turn is someone else's
            turn = queue.popleft()
            if queue:
                self._waiting[client] = queue
            if turn.done():  # its request was cancelled and has not cleaned up yet
                continue
            self._grant(client)
            turn.set_result(None)
