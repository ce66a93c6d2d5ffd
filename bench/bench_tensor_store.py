"""Range reads of a stored tensor file against reading it whole, same file, same run.

    .venv/bin/python bench/bench_tensor_store.py [--mb 200] [--reps N] [--no-postgres]

A safetensors file of ``--mb`` MB (one float32 tensor plus small ones, written by the
``safetensors`` package) is stored as a run's tensor file (NOTE [tensor files in chunks] in
gradtrace/storage/tables.py), then:

1. the store itself, on SQLite and on a real PostgreSQL (started as the tests start it): a
   64 KiB range at a random offset, against reading the whole file; with the peak of Python
   memory each one allocates (tracemalloc), which is what "not loading the whole file" means;
2. the real service over HTTP (SQLite): ``GET …/tensors.safetensors`` with ``Range`` for
   64 KiB (and ``/healthz`` for the floor of any answer), against the whole file (hashed as
   it streams: NOTE [checking a stored file before serving it] in gradtrace/api/tensors.py).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import numpy as np
import safetensors.numpy

from common import ROOT, Row, print_table

sys.path.insert(0, str(ROOT / "tests"))

RANGE = 64 << 10


def _file(mb: int) -> bytes:
    big = np.random.default_rng(0).standard_normal(mb * (1 << 20) // 4, dtype=np.float32)
    return safetensors.numpy.save({"n1.out0": big, "n2.out0": np.ones((3, 4), np.float32)})


def _timed(fn: Callable[[], object], reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def _peak_bytes(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@contextlib.contextmanager
def _databases(use_postgres: bool) -> Iterator[list[tuple[str, str]]]:
    with tempfile.TemporaryDirectory(prefix="gradtrace-bench-") as tmp:
        urls = [("SQLite", f"sqlite:///{Path(tmp) / 'bench.db'}")]
        if not use_postgres:
            yield urls
            return
        from storage.conftest import new_pg_database, pg_cluster

        try:
            with pg_cluster() as cluster:
                yield [*urls, ("PostgreSQL", new_pg_database(cluster.url))]
                return
        except BaseException as exc:  # pytest.skip when the binaries are missing
            if type(exc).__name__ != "Skipped":
                raise
        yield urls


def bench_store(data: bytes, reps: int, use_postgres: bool) -> list[Row]:
    from gradtrace.storage.codec import encode
    from gradtrace.storage.store import Store
    from storage.sample_docs import chain_document

    rows: list[Row] = []
    rng = random.Random(0)
    with _databases(use_postgres) as urls:
        for name, url in urls:
            store = Store(url)
            store.migrate()
            doc = encode(chain_document(3))
            t0 = time.perf_counter()
            store.put_run(doc, data)
            print(f"{name}: stored {len(data) / 1e6:.0f} MB in {time.perf_counter() - t0:.2f} s")
            source = store.run_tensors(doc.doc_id)
            assert source is not None

            def one_range(src=source) -> bytes:  # type: ignore[no-untyped-def]
                start = rng.randrange(0, src.size - RANGE)
                return src.read(start, start + RANGE)

            def whole(src=source) -> int:  # type: ignore[no-untyped-def]
                return sum(len(piece) for piece in src.stream(0, src.size))

            assert whole() == len(data)
            whole_row = Row(f"{name}: whole file, streamed", _timed(whole, max(3, reps // 10)))
            range_row = Row(f"{name}: 64 KiB range", _timed(one_range, reps), baseline="whole file",
                            baseline_median_s=whole_row.median)
            rows += [whole_row, range_row]
            print(f"{name}: Python memory at peak: 64 KiB range {_peak_bytes(one_range) / 1e6:.2f} MB, "
                  f"whole file streamed {_peak_bytes(whole) / 1e6:.2f} MB, file {len(data) / 1e6:.0f} MB")
            store.close()
    return rows


def bench_http(data: bytes, reps: int) -> list[Row]:
    from api.tensor_runs import store_run
    from conftest import running_server

    rng = random.Random(1)
    with running_server() as srv, httpx.Client(base_url=srv.url, timeout=120) as client:
        run = store_run(srv, data)
        url = f"/api/runs/{run.doc_id}/tensors.safetensors"

        def one_range() -> None:
            start = rng.randrange(0, len(data) - RANGE)
            r = client.get(url, headers={"Range": f"bytes={start}-{start + RANGE - 1}"})
            assert r.status_code == 206 and len(r.content) == RANGE

        def whole() -> None:
            with client.stream("GET", url) as r:
                assert r.status_code == 200
                assert sum(len(piece) for piece in r.iter_raw()) == len(data)

        def trivial() -> None:
            assert client.get("/healthz").status_code == 200

        trivial_row = Row("HTTP: GET /healthz (the floor of any answer)", _timed(trivial, reps))
        whole_row = Row("HTTP: GET whole file", _timed(whole, max(3, reps // 10)))
        range_row = Row("HTTP: GET 64 KiB Range (206)", _timed(one_range, reps), baseline="whole file",
                        baseline_median_s=whole_row.median)
        return [trivial_row, whole_row, range_row]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    data = _file(args.mb)
    rows = bench_store(data, args.reps, not args.no_postgres)
    print_table(f"Stored tensor file ({len(data) / 1e6:.0f} MB): 64 KiB range vs whole", rows)
    print_table(f"Over HTTP ({len(data) / 1e6:.0f} MB, SQLite)", bench_http(data, args.reps))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
