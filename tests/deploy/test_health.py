"""The health record (`clusterfab:health`) that health checks write and promotion reads."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping

import pytest

from clusterfab.health import (
    HEALTH_CONFIG_KEY,
    HealthRecord,
    HealthRecordError,
    deployed_catalog_version,
    deployed_digest,
    health_record,
    parse_health,
    read_health,
    record_health,
)

DIGEST = "0123456789abcdef" * 4
AT = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)


class ConfigOnly:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def config(self) -> Mapping[str, str]:
        return self.values

    def set_config(self, key: str, value: str) -> None:
        self.values[key] = value


def test_key_and_format_are_the_contract() -> None:
    assert HEALTH_CONFIG_KEY == "clusterfab:health"
    record = health_record(passed=True, digest=DIGEST, at=AT)
    assert json.loads(record.to_config()) == {
        "status": "passed",
        "digest": DIGEST,
        "at": "2026-11-22T10:00:00+00:00",
    }


def test_record_and_read_round_trip() -> None:
    stack = ConfigOnly()
    written = record_health(stack, passed=False, digest=DIGEST, at=AT)
    raw = read_health(stack)
    assert raw is not None
    assert parse_health(raw) == written == HealthRecord("failed", DIGEST, AT)
    assert not written.passed


def test_read_without_a_record() -> None:
    assert read_health(ConfigOnly()) is None


def test_default_time_is_now_in_utc() -> None:
    record = health_record(passed=True, digest=DIGEST)
    assert record.at.tzinfo is not None
    assert abs((dt.datetime.now(dt.UTC) - record.at).total_seconds()) < 60


def test_naive_time_in_a_record_is_read_as_utc() -> None:
    record = parse_health(json.dumps({"status": "passed", "digest": DIGEST, "at": "2026-11-22T10:00:00"}))
    assert record.at == AT


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("passed", "not JSON"),
        ("[1]", "not a JSON object"),
        (json.dumps({"status": "ok", "digest": DIGEST, "at": "2026-11-22"}), "status 'ok' is not one of"),
        (json.dumps({"status": "passed", "digest": "abc", "at": "2026-11-22"}), "digest 'abc' is not"),
        (json.dumps({"status": "passed", "digest": DIGEST, "at": "yesterday"}), "at 'yesterday' is not"),
        (json.dumps({"status": "passed", "digest": DIGEST}), "at None is not"),
    ],
)
def test_malformed_records_say_what_is_wrong(raw: str, problem: str) -> None:
    with pytest.raises(HealthRecordError, match=problem):
        parse_health(raw)


def test_writer_rejects_bad_input() -> None:
    with pytest.raises(HealthRecordError, match="sha256"):
        health_record(passed=True, digest="nope", at=AT)
    with pytest.raises(HealthRecordError, match="timezone"):
        health_record(passed=True, digest=DIGEST, at=dt.datetime(2026, 11, 22))


def test_deployed_digest_and_catalog_version_from_outputs() -> None:
    outputs = {"blueprint": {"digest": DIGEST, "catalog_version": "2026.11.22"}}
    assert deployed_digest(outputs) == DIGEST
    assert deployed_catalog_version(outputs) == "2026.11.22"
    assert deployed_digest({}) is None
    assert deployed_catalog_version({"blueprint": "x"}) is None
