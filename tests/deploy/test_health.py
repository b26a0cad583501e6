"""The health record: its format, what makes it prove a revision healthy, and the stores it lives in.

The S3 store runs against moto's S3 and the GCS store against gcp-storage-emulator's JSON API, so
the object times the gate trusts are the services' own.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab.clouds.aws.store import S3HealthStore
from clusterfab.clouds.base import HealthStore, StoredObject
from clusterfab.clouds.gcp.store import GcsHealthStore
from clusterfab.core.errors import UsageError
from clusterfab.deploy.checkout import checkout_commit
from clusterfab.health import (
    CLOCK_SKEW,
    DEFAULT_MAX_AGE,
    HealthRecordError,
    Provenance,
    check_record,
    deployed_catalog_version,
    deployed_digest,
    health_key,
    health_problems,
    parse_record,
)
from tests.factories import HEALTH_KEY, signed_record

DIGEST = "0123456789abcdef" * 4
BUNDLE = "fedcba9876543210" * 4
COMMIT = "0123456789abcdef0123456789abcdef01234567"
EXPECTED = Provenance(DIGEST, BUNDLE, "2026.11.22", COMMIT)
AT = dt.datetime(2026, 11, 22, 10, 0, tzinfo=dt.UTC)
OF = "this promotion is of"
PASSED = "host(s) passed"


def record(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "status": "passed",
        "stack": "dev",
        "blueprint_digest": DIGEST,
        "bundle_sha256": BUNDLE,
        "catalog_version": "2026.11.22",
        "commit": COMMIT,
        "checked_at": AT.isoformat(),
        "hosts": {"trainers": 16},
        "required": {"trainers": 16},
        "reason": "",
    }
    return {**data, **changes}


KEY = HEALTH_KEY
"""The stack's health signing key (its `health_signing_key` output)."""


def stored(body: dict[str, Any] | str, written_at: dt.datetime = AT) -> StoredObject:
    text = body if isinstance(body, str) else json.dumps(signed_record(body))
    return StoredObject(text.encode(), written_at, "s3://b/health/dev.json")


def problems(
    body: dict[str, Any] | str,
    *,
    written_at: dt.datetime = AT,
    last_update: dt.datetime | None = AT - dt.timedelta(hours=1),
    now: dt.datetime = AT + dt.timedelta(hours=1),
    expected: Provenance = EXPECTED,
    stack: str = "dev",
    signing_key: str | None = KEY,
) -> list[str]:
    return health_problems(
        stored(body, written_at),
        stack=stack,
        signing_key=signing_key,
        expected=expected,
        last_update=last_update,
        now=now,
        max_age=DEFAULT_MAX_AGE,
    )


# --- the record ------------------------------------------------------------------------------------


def test_a_record_written_by_configure_reads_back_whole() -> None:
    written = check_record(
        stack="dev",
        provenance=EXPECTED,
        hosts={"trainers": 16},
        required={"trainers": 16},
        checks_passed=True,
        at=AT,
    )
    assert json.loads(written.to_json(KEY)) == signed_record(record())
    assert parse_record(written.to_json(KEY)) == written
    assert written.passed


def test_a_pass_on_fewer_hosts_than_a_groups_minimum_is_a_failure() -> None:
    partial = check_record(
        stack="dev",
        provenance=EXPECTED,
        hosts={"trainers": 15, "eval": 0},
        required={"trainers": 16, "eval": 1},
        checks_passed=True,
        at=AT,
    )
    assert (partial.status, partial.reason) == (
        "failed",
        "partial fleet: eval: 0 of at least 1 host(s) passed; trainers: 15 of at least 16 host(s) passed",
    )
    failed = check_record(stack="dev", provenance=EXPECTED, hosts={}, required={}, checks_passed=False, at=AT)
    assert (failed.status, failed.reason) == ("failed", "the health check failed on at least one host")


def test_the_key_is_the_stacks_short_name() -> None:
    assert health_key("dev") == "health/dev.json"
    assert health_key("acme/clusterfab/prod-eu") == "health/prod-eu.json"
    assert health_key("a b") == "health/a-b.json"


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("passed", "not JSON"),
        ("[1]", "not a JSON object"),
        (json.dumps(record(status="ok")), "status 'ok' is not one of passed, failed"),
        (json.dumps(record(blueprint_digest="abc")), "blueprint_digest 'abc' is not valid"),
        (json.dumps(record(commit="HEAD")), "commit 'HEAD' is not valid"),
        (json.dumps(record(checked_at="yesterday")), "checked_at 'yesterday' is not an ISO date-time"),
        (json.dumps(record(checked_at="2026-11-22T10:00:00")), "checked_at has no time zone"),
        (json.dumps(record(hosts={"trainers": "16"})), "hosts must map node groups to host counts"),
    ],
)
def test_malformed_records_say_what_is_wrong(body: str, problem: str) -> None:
    with pytest.raises(HealthRecordError, match=problem):
        parse_record(body)


def test_deployed_digest_and_catalog_version_from_outputs() -> None:
    outputs = {"blueprint": {"digest": DIGEST, "catalog_version": "2026.11.22"}}
    assert deployed_digest(outputs) == DIGEST
    assert deployed_catalog_version(outputs) == "2026.11.22"
    assert deployed_digest({}) is None
    assert deployed_catalog_version({"blueprint": "x"}) is None


# --- what proves a revision healthy ----------------------------------------------------------------


def test_a_recent_whole_fleet_pass_of_this_revision_after_the_last_update_passes() -> None:
    assert problems(record()) == []
    # A check a minute off the store's clock is fine (the writer's clock may drift that much).
    assert problems(record(), written_at=AT + CLOCK_SKEW) == []


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"status": "failed", "reason": "nccl"}, "the last check failed (nccl)"),
        ({"stack": "staging"}, "it records stack staging, not dev"),
        ({"hosts": {"trainers": 8}}, f"it passed on a partial fleet (trainers: 8 of at least 16 {PASSED})"),
        ({"blueprint_digest": "a" * 64}, f"it checked blueprint digest aaaaaaaaaaaa, {OF} {DIGEST[:12]}"),
        ({"bundle_sha256": "b" * 64}, f"it checked playbook bundle bbbbbbbbbbbb, {OF} {BUNDLE[:12]}"),
        ({"catalog_version": "2026.01.01"}, f"it checked catalog version 2026.01.01, {OF} 2026.11.22"),
        ({"commit": "c" * 40}, f"it checked git commit cccccccccccc, {OF} {COMMIT[:12]}"),
        (
            {"checked_at": (AT - dt.timedelta(days=30)).isoformat()},
            "its checked_at (2026-10-23 10:00 UTC) is not when it was written (2026-11-22 10:00 UTC)",
        ),
    ],
)  # fmt: skip
def test_a_record_that_does_not_match_is_refused(changes: dict[str, Any], problem: str) -> None:
    assert problems(record(**changes)) == [problem]


def test_a_record_older_than_the_last_update_or_the_maximum_age_is_refused() -> None:
    assert problems(record(), last_update=AT) == [
        "it was written at 2026-11-22 10:00 UTC, before dev's last update (2026-11-22 10:00 UTC)"
    ]
    assert problems(record(), now=AT + dt.timedelta(hours=73)) == ["it is 73 h old, more than 72 h"]


def test_a_dirty_checkout_never_passes() -> None:
    dirty = Provenance(DIGEST, BUNDLE, "2026.11.22", f"{COMMIT}-dirty")
    assert problems(record(commit=f"{COMMIT}-dirty"), expected=dirty) == [
        "this checkout has uncommitted changes: commit them, deploy and check again"
    ]


FORGED = "it was not written by `clusterfab configure` for dev"


def test_a_record_not_signed_with_the_stacks_key_is_refused_whatever_it_says() -> None:
    # What anyone who may write the bucket (and not read the stack's secrets) can put there.
    assert problems(json.dumps(record())) == [f"it is not signed: {FORGED}"]
    assert problems(json.dumps(signed_record(record(), key="6" * 64))) == [
        f"its signature is not the stack's health signing key's: {FORGED}"
    ]
    # A real failed record with its status edited after signing.
    edited = {**signed_record(record(status="failed", reason="nccl")), "status": "passed", "reason": ""}
    assert problems(json.dumps(edited)) == [
        f"its signature is not the stack's health signing key's: {FORGED}"
    ]
    assert problems(json.dumps({**signed_record(record()), "signature": 7})) == [
        f"it is not signed: {FORGED}"
    ]


def test_a_stack_without_a_signing_key_never_passes() -> None:
    assert problems(record(), signing_key=None) == [
        "dev has no health signing key (its stack predates signed records): "
        "update it (`clusterfab up --stack dev`)"
    ]


def test_a_body_that_is_not_a_record_is_refused_by_location() -> None:
    assert problems("{") == ["s3://b/health/dev.json is not a health record (not JSON (Expecting property "
                             "name enclosed in double quotes: line 1 column 2 (char 1)))"]  # fmt: skip


# --- the stores ------------------------------------------------------------------------------------


def _round_trip(store: HealthStore) -> None:
    assert store.get("health/dev.json") is None
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    store.put("health/dev.json", json.dumps(record()).encode())
    found = store.get("health/dev.json")
    assert found is not None
    assert json.loads(found.body) == record()
    # The store's own clock, not the body's checked_at (2026-11-22 10:00).
    assert before - dt.timedelta(seconds=1) <= found.written_at <= dt.datetime.now(dt.UTC)
    assert found.location == store.location("health/dev.json")


def test_s3_store_round_trip_with_the_services_time() -> None:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="llm-pretrain-artifacts")
        store = S3HealthStore("llm-pretrain-artifacts", "us-east-1", client)
        assert store.location("health/dev.json") == "s3://llm-pretrain-artifacts/health/dev.json"
        _round_trip(store)


def test_s3_store_says_which_bucket_it_cannot_reach() -> None:
    with mock_aws():
        store = S3HealthStore("no-such-bucket", "us-east-1", boto3.client("s3", region_name="us-east-1"))
        with pytest.raises(
            Exception, match=r"cannot write s3://no-such-bucket/health/dev.json: .*NoSuchBucket"
        ):
            store.put("health/dev.json", b"{}")


@pytest.fixture(scope="module")
def gcs_emulator() -> Iterator[str]:
    """gcp-storage-emulator serving Cloud Storage's JSON API on a free local port."""
    from gcp_storage_emulator.server import create_server

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket="llm-pretrain-artifacts")
    server.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()


def test_gcs_store_round_trip_with_the_services_time(
    gcs_emulator: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_emulator)
    store = GcsHealthStore("llm-pretrain-artifacts")
    assert store.location("health/dev.json") == "gs://llm-pretrain-artifacts/health/dev.json"
    _round_trip(store)


# --- the checkout's commit -------------------------------------------------------------------------


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def test_the_commit_names_local_changes(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a git checkout with a commit"):
        checkout_commit(tmp_path)
    _git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / "bp.yaml").write_text("name: a\n")
    _git(tmp_path, "add", "bp.yaml")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base")
    head = subprocess.run(
        ["git", "-C", str(tmp_path), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert checkout_commit(tmp_path) == head
    (tmp_path / "bp.yaml").write_text("name: b\n")
    assert checkout_commit(tmp_path) == f"{head}-dirty"
    _git(tmp_path, "checkout", "-q", "bp.yaml")
    (tmp_path / "new-role.yml").write_text("- x\n")  # untracked files reach the bundle too
    assert checkout_commit(tmp_path) == f"{head}-dirty"
