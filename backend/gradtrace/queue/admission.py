"""Admission to a device's queue: the bound is checked and the job enqueued in one Redis step.

NOTE [hard queue bound]
    arq keeps a job in its queue (a sorted set) from enqueue until it ends, so the queue's size
    is what runs plus what waits. A job is admitted only while that size is below the bound
    (the slots of the workers taking jobs, the jobs still running on draining workers, plus
    ``GRADTRACE_QUEUE_SIZE``). A read followed by an enqueue lets replicas, or two requests on one
    replica, pass the same check at once and overshoot; here one Lua script reads the size and
    writes the job exactly as :meth:`arq.connections.ArqRedis.enqueue_job` does (job key with its
    expiry, then the queue entry), and Redis runs a script alone, so no two admissions interleave.
    The bound itself comes from the replica's view of the registry (at most half a second old).
"""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import Job as ArqJob
from arq.jobs import serialize_job
from arq.utils import timestamp_ms, to_ms

from gradtrace.queue import keys

ENQUEUE_IF_ROOM = """
-- KEYS: the queue, the job's key, its result's key
-- ARGV: the bound, the job id, its score (enqueue time, ms), the job key's expiry (ms), the job
if redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
  return {-1, 0}
end
local size = redis.call('ZCARD', KEYS[1])
if size >= tonumber(ARGV[1]) then
  return {0, size}
end
redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return {1, size + 1}
"""


@dataclass(frozen=True)
class Admitted:
    """What the script decided: ``job`` is None when the queue was full (``size`` jobs in it)."""

    job: ArqJob | None
    size: int


class Admission:
    """Enqueues jobs only while their queue is below a bound (NOTE [hard queue bound])."""

    def __init__(self, redis: ArqRedis) -> None:
        self.redis = redis
        self._script = redis.register_script(ENQUEUE_IF_ROOM)

    async def enqueue(self, payload: bytes, *, job_id: str, queue: str, bound: int,
                      expires_s: float) -> Admitted:
        """Enqueue ``payload`` (a job's wire form) unless the queue holds ``bound`` jobs."""
        now = timestamp_ms()
        raw = serialize_job(keys.FUNCTION, (payload,), {}, None, now, serializer=keys.serialize)
        got = await self._script(keys=[queue, job_key_prefix + job_id, result_key_prefix + job_id],
                                 args=[bound, job_id, now, to_ms(expires_s), raw])
        verdict, size = int(got[0]), int(got[1])
        if verdict < 0:
            raise ValueError(f"job id {job_id} is already in use")
        if verdict == 0:
            return Admitted(None, size)
        return Admitted(ArqJob(job_id, redis=self.redis, _queue_name=queue, _deserializer=keys.deserialize), size)
