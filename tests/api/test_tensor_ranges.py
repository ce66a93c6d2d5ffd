"""Range and conditional headers as RFC 9110 reads them (NOTE [which Range requests are
answered how] in ``api/ranges.py``); the same cases go over HTTP in ``test_tensors.py``."""

from __future__ import annotations

import pytest

from gradtrace.api.ranges import ByteRange, none_match, requested_range
from gradtrace.errors import InvalidRange, RangeNotSatisfiable

SIZE = 1000
ETAG = '"abc"'


@pytest.mark.parametrize(("header", "expected"), [
    ("bytes=0-0", (0, 1)), ("bytes=0-999", (0, 1000)), ("bytes=10-19", (10, 20)),
    ("bytes=990-", (990, 1000)), ("bytes=-10", (990, 1000)), ("bytes=-5000", (0, 1000)),
    ("bytes=500-99999999", (500, 1000)), ("BYTES=1-2", (1, 3)), ("bytes= 3-4 ", (3, 5)),
    ("bytes=999-999", (999, 1000)), ("bytes=0-" + "9" * 40, (0, 1000)),
])
def test_one_satisfiable_range_is_answered_exactly(header: str, expected: tuple[int, int]) -> None:
    got = requested_range(header, SIZE)
    assert got == ByteRange(*expected, SIZE)
    assert got is not None and got.content_range == f"bytes {expected[0]}-{expected[1] - 1}/{SIZE}"


@pytest.mark.parametrize("header", ["bytes=1000-", "bytes=1000-2000", "bytes=-0", "bytes=" + "9" * 40 + "-"])
def test_a_range_with_no_byte_in_the_file_is_416(header: str) -> None:
    with pytest.raises(RangeNotSatisfiable) as err:
        requested_range(header, SIZE)
    assert err.value.size == SIZE and err.value.status_code == 416


@pytest.mark.parametrize("header", ["bytes=5-3", "bytes=", "bytes=-", "bytes=a-b", "bytes=1-2-3", "bytes=0x10-",
                                    "bytes=--1", "bytes=1-2,", "bytes=½-", "bytes=١-٢"])
def test_a_range_that_does_not_parse_is_400(header: str) -> None:
    with pytest.raises(InvalidRange) as err:
        requested_range(header, SIZE)
    assert err.value.status_code == 400


@pytest.mark.parametrize("header", [None, "items=0-5", "bytes 0-5", "bytes=0-1,5-9", "bytes=0-1, 2000-"])
def test_no_range_another_unit_or_several_ranges_answer_the_whole_file(header: str | None) -> None:
    assert requested_range(header, SIZE) is None


def test_if_range_honours_the_range_only_for_the_files_own_strong_etag() -> None:
    assert requested_range("bytes=0-9", SIZE, if_range=ETAG, etag=ETAG) == ByteRange(0, 10, SIZE)
    for other in ('"other"', f"W/{ETAG}", "Fri, 27 Nov 2026 10:00:00 GMT"):
        assert requested_range("bytes=0-9", SIZE, if_range=other, etag=ETAG) is None


def test_if_none_match_compares_weakly_and_takes_lists_and_star() -> None:
    assert none_match(ETAG, ETAG) and none_match(f"W/{ETAG}", ETAG) and none_match("*", ETAG)
    assert none_match(f'"x", {ETAG}', ETAG)
    assert not none_match('"abcd"', ETAG) and not none_match(None, ETAG) and not none_match("abc", ETAG)
