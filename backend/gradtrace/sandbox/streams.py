"""Non-blocking pipe I/O on the event loop, with hard caps (web-process side).

The job's pipes are read with ``loop.add_reader`` straight from the fd: no transport buffers
grow beyond the cap, and the moment a job writes one byte too many the supervisor is told, so
it can kill the job instead of reading a flood.
"""

from __future__ import annotations

import asyncio
import contextlib
import os


class CappedReader:
    """Reads ``fd`` until EOF, keeping at most ``cap`` bytes; ``overflow`` fires beyond that."""

    def __init__(self, fd: int, cap: int) -> None:
        self.fd = fd
        self.cap = cap
        self.loop = asyncio.get_running_loop()
        self.chunks: list[bytes] = []
        self.size = 0
        self.overflowed = False
        self.done: asyncio.Future[None] = self.loop.create_future()
        self.overflow: asyncio.Future[None] = self.loop.create_future()
        os.set_blocking(fd, False)
        self.loop.add_reader(fd, self._on_readable)
        self._reading = True

    def _on_readable(self) -> None:
        try:
            chunk = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._stop()
            if not self.done.done():
                self.done.set_result(None)
            return
        self.chunks.append(chunk)
        self.size += len(chunk)
        if self.size > self.cap:
            self.overflowed = True
            self._stop()
            if not self.overflow.done():
                self.overflow.set_result(None)
            if not self.done.done():
                self.done.set_result(None)

    def _stop(self) -> None:
        if self._reading:
            self.loop.remove_reader(self.fd)
            self._reading = False

    def data(self) -> bytes:
        return b"".join(self.chunks)

    def close(self) -> None:
        self._stop()
        for fut in (self.done, self.overflow):
            if not fut.done():
                fut.cancel()
        with contextlib.suppress(OSError):
            os.close(self.fd)


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


async def write_all(fd: int, data: bytes) -> None:
    """Write everything to a non-blocking pipe, waiting for room; raises BrokenPipeError."""
    loop = asyncio.get_running_loop()
    os.set_blocking(fd, False)
    view = memoryview(data)
    while view:
        try:
            written = os.write(fd, view)
            view = view[written:]
            continue
        except BlockingIOError:
            pass
        ready: asyncio.Future[None] = loop.create_future()
        loop.add_writer(fd, _resolve, ready)
        try:
            await ready
        finally:
            loop.remove_writer(fd)
