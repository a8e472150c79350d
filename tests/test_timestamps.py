"""Timestamps as a load reads them (``jsonio.parse_timestamp``): the usual "2026-01-20T15:07:58.839Z" through its
fast path (the hour and the minute cached) gives the seconds the full ISO-8601 parse gives, and anything else is
parsed in full or refused."""
from __future__ import annotations

from datetime import datetime, timezone

from hypothesis import given, settings, strategies as st

from compactscope.core.files.jsonio import parse_timestamp


def _full(value: str) -> float | None:
    try:
        dt = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)).timestamp()


@settings(max_examples=500, deadline=None)
@given(when=st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1)))
def test_the_usual_form_is_the_full_parse(when):
    value = when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
    full = _full(value)
    assert len(value) == 24 and full is not None
    assert abs(parse_timestamp(value) - full) < 1e-6, value
    # a second time (from the caches) and another second of the same minute
    assert parse_timestamp(value) == parse_timestamp(value)
    other = value[:17] + "07.250Z"
    assert abs(parse_timestamp(other) - _full(other)) < 1e-6


@settings(max_examples=500, deadline=None)
@given(minute=st.text(alphabet="0123456789x٣ ", min_size=2, max_size=2),
       seconds=st.text(alphabet="0123456789._x ", min_size=6, max_size=6))
def test_a_broken_minute_or_second_is_never_read_as_another_time(minute, seconds):
    value = f"2026-01-20T15:{minute}:{seconds}Z"
    got, full = parse_timestamp(value), _full(value)
    if full is not None:
        assert got is not None and abs(got - full) < 1e-6, value
    elif minute.isascii() and minute.isdigit() and int(minute) < 60:
        # the seconds as Python reads a float ("1_2.34" is 12.34, "12.34 " too), or refused: never another time
        try:
            sec = float(seconds)
        except ValueError:
            sec = None
        if sec is None:
            assert got is None or got == _full(value.replace(" ", "T", 1)), value
        else:
            assert abs(got - (_full(f"2026-01-20T15:{minute}:00+00:00") + sec)) < 1e-6, value
    else:
        assert got is None or got == _full(value.replace(" ", "T", 1)), value


def test_other_forms():
    assert parse_timestamp("2026-01-20T15:07:58Z") == _full("2026-01-20T15:07:58+00:00")
    assert parse_timestamp("2026-01-20T15:07:58.839+02:00") == _full("2026-01-20T15:07:58.839+02:00")
    assert parse_timestamp(1768921678839) == 1768921678.839 and parse_timestamp(1768921678) == 1768921678.0
    assert parse_timestamp("yesterday") is None and parse_timestamp("") is None and parse_timestamp(True) is None
    assert parse_timestamp("2026-01-20T15:61:58.839Z") is None              # no minute 61


def test_each_minute_of_an_hour_is_its_own():
    for minute in ("00", "07", "59", "07", "00"):               # (again: the cached ones)
        value = f"2031-05-06T11:{minute}:30.500Z"
        assert parse_timestamp(value) == _full(value), value
