"""Promotion gates: every refusal has its reason and its fix; all-pass lets the promotion go."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.clouds.base import StoredObject
from clusterfab.cost import estimate_cost
from clusterfab.cost.estimate import CostEstimate
from clusterfab.deploy.events import ResourceStep
from clusterfab.deploy.gates import (
    GateResult,
    blueprint_gate,
    budget_gate,
    health_gate,
    refusal,
    replacement_gate,
)
from clusterfab.health import DEFAULT_MAX_AGE, Provenance
from tests.factories import HEALTH_KEY, TODAY, signed_record, spec

DIGEST = "a" * 64
OTHER = "b" * 64
BLUEPRINT = "blueprints/examples/aws-p5-efa-fsx.yaml"
STATEFUL = {"aws:fsx/lustreFileSystem:LustreFileSystem", "aws:s3/bucket:Bucket"}


def outputs(digest: str | None = DIGEST, catalog: str | None = "2026.11.22") -> dict[str, Any]:
    blueprint: dict[str, Any] = {"name": "llm-pretrain"}
    if digest is not None:
        blueprint["digest"] = digest
    if catalog is not None:
        blueprint["catalog_version"] = catalog
    return {"blueprint": blueprint}


def digest_gate(**overrides: Any) -> GateResult:
    args: dict[str, Any] = {
        "source": "dev",
        "target": "prod",
        "source_blueprint": BLUEPRINT,
        "target_blueprint": BLUEPRINT,
        "local_digest": DIGEST,
        "source_outputs": outputs(),
        "catalog_version": "2026.11.22",
    }
    return blueprint_gate(**{**args, **overrides})


COMMIT = "c" * 40
BUNDLE = "d" * 64
EXPECTED = Provenance(DIGEST, BUNDLE, "2026.11.22", COMMIT)
WRITTEN = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
LOCATION = "s3://llm-pretrain-artifacts/health/dev.json"


def health(status: str = "passed", digest: str = DIGEST) -> StoredObject:
    record = {
        "status": status,
        "stack": "dev",
        "blueprint_digest": digest,
        "bundle_sha256": BUNDLE,
        "catalog_version": "2026.11.22",
        "commit": COMMIT,
        "checked_at": WRITTEN.isoformat(),
        "hosts": {"trainers": 16},
        "required": {"trainers": 16},
        "reason": "" if status == "passed" else "the health check failed on at least one host",
    }
    return StoredObject(json.dumps(signed_record(record)).encode(), WRITTEN, LOCATION)


KEY = HEALTH_KEY


def checked(stored: StoredObject | None) -> GateResult:
    return health_gate(
        source="dev",
        stored=stored,
        location=LOCATION,
        signing_key=KEY,
        expected=EXPECTED,
        last_update=WRITTEN - dt.timedelta(hours=1),
        now=WRITTEN + dt.timedelta(hours=1),
        max_age=DEFAULT_MAX_AGE,
    )


def step(
    op: str, type_: str, name: str, *, protect: bool = False, keys: tuple[str, ...] = ()
) -> ResourceStep:
    urn = f"urn:pulumi:prod::clusterfab::{type_}::{name}"
    return ResourceStep("start", op, urn, type_, name, protect, True, replace_keys=keys, planning=True)


def estimate(max_hourly: float | None) -> CostEstimate:
    small = spec(
        name="small",
        node_groups=[{"name": "trainers", "machine_type": "p5.48xlarge", "count": 2}],
        budget=None if max_hourly is None else {"max_hourly_usd": max_hourly},
    )
    return estimate_cost(small, load_catalog(), today=TODAY)


# --- blueprint -------------------------------------------------------------------------------------


def test_blueprint_gate_passes_for_the_same_digest() -> None:
    assert digest_gate() == GateResult("blueprint", True, f"dev runs {BLUEPRINT} at digest aaaaaaaaaaaa")


def test_blueprint_gate_refuses_another_revision() -> None:
    assert digest_gate(source_outputs=outputs(digest=OTHER)) == GateResult(
        "blueprint",
        False,
        f"dev was last updated from another revision of {BLUEPRINT} (digest bbbbbbbbbbbb, the local file is "
        "aaaaaaaaaaaa): deploy this revision to dev first (`clusterfab up --stack dev`), check its health, "
        "then promote",
    )


def test_blueprint_gate_refuses_a_source_never_updated() -> None:
    assert digest_gate(source_outputs={}) == GateResult(
        "blueprint",
        False,
        "stack dev has no blueprint.digest output (never updated by this program?): run "
        "`clusterfab up --stack dev` first",
    )


def test_blueprint_gate_refuses_stacks_running_different_blueprints() -> None:
    assert digest_gate(target_blueprint="blueprints/other.yaml") == GateResult(
        "blueprint",
        False,
        f"dev runs {BLUEPRINT} but prod runs blueprints/other.yaml; promotion moves one blueprint between "
        "environments: point both stacks' clusterfab:blueprint at the same file",
    )


def test_blueprint_gate_refuses_a_target_without_blueprint_config() -> None:
    assert digest_gate(target_blueprint=None) == GateResult(
        "blueprint",
        False,
        f"stack prod has no clusterfab:blueprint config: set it to {BLUEPRINT} "
        f"(`pulumi config set clusterfab:blueprint {BLUEPRINT} --stack prod`)",
    )


def test_blueprint_gate_refuses_a_source_without_blueprint_config() -> None:
    assert digest_gate(source_blueprint=None) == GateResult(
        "blueprint",
        False,
        "stack dev has no clusterfab:blueprint config: set it to the blueprint both stacks run "
        "(`pulumi config set clusterfab:blueprint blueprints/... --stack dev`)",
    )


def test_blueprint_gate_notes_another_catalog_version() -> None:
    assert digest_gate(source_outputs=outputs(catalog="2026.01.01")) == GateResult(
        "blueprint",
        True,
        f"dev runs {BLUEPRINT} at digest aaaaaaaaaaaa",
        (
            "dev was updated with catalog 2026.01.01, this clusterfab has catalog 2026.11.22: machine facts "
            "and prices may differ from what dev was built with",
        ),
    )


# --- health ----------------------------------------------------------------------------------------


def test_health_gate_passes_for_a_passing_check_of_this_revision() -> None:
    assert checked(health()) == GateResult(
        "health",
        True,
        "dev passed its health check at 2026-11-20T10:00:00+00:00 (commit cccccccccccc, bundle dddddddddddd)",
    )


def test_health_gate_refuses_without_a_recorded_check() -> None:
    assert checked(None) == GateResult(
        "health",
        False,
        f"no health check is recorded for dev ({LOCATION}): run the health check on dev "
        "(`clusterfab configure --stack dev`)",
    )


def test_health_gate_refuses_a_passing_record_someone_else_wrote_to_the_bucket() -> None:
    good = health()
    forged = json.loads(good.body)
    del forged["signature"]
    result = checked(StoredObject(json.dumps(forged).encode(), WRITTEN, LOCATION))
    assert result == GateResult(
        "health",
        False,
        f"the health record {LOCATION} does not pass: it is not signed: it was not written by "
        "`clusterfab configure` for dev; run the health check on dev (`clusterfab configure --stack dev`)",
    )


def test_health_gate_refuses_listing_everything_wrong_with_the_record() -> None:
    assert checked(health(status="failed", digest=OTHER)) == GateResult(
        "health",
        False,
        f"the health record {LOCATION} does not pass: the last check failed (the health check failed on "
        "at least one host); it checked blueprint digest bbbbbbbbbbbb, this promotion is of aaaaaaaaaaaa; "
        "run the health check on dev (`clusterfab configure --stack dev`)",
    )


# --- replacements ----------------------------------------------------------------------------------

NOTHING_DESTROYED = GateResult(
    "replacements", True, "the preview of prod deletes or replaces no stateful resource"
)


def test_replacement_gate_passes_updates_and_stateless_replacements() -> None:
    steps = [
        step("update", "aws:ec2/launchTemplate:LaunchTemplate", "lt"),
        step("replace", "aws:ec2/placementGroup:PlacementGroup", "pg"),
        step("delete", "aws:iam/role:Role", "role"),
    ]
    result = replacement_gate(target="prod", steps=steps, stateful_types=STATEFUL, allow_replace=False)
    assert result == NOTHING_DESTROYED


def test_replacement_gate_refuses_replacing_a_stateful_resource() -> None:
    steps = [step("replace", "aws:fsx/lustreFileSystem:LustreFileSystem", "fs", keys=("deploymentType",))]
    result = replacement_gate(target="prod", steps=steps, stateful_types=STATEFUL, allow_replace=False)
    assert result == GateResult(
        "replacements",
        False,
        "the preview of prod would destroy data: replace fs (aws:fsx/lustreFileSystem:LustreFileSystem, "
        "stateful, because of deploymentType); change the blueprint so these are kept, or pass "
        "--allow-replace to accept the loss",
    )


def test_replacement_gate_refuses_deleting_a_protected_resource() -> None:
    steps = [step("delete", "aws:iam/role:Role", "kept-role", protect=True)]
    result = replacement_gate(target="prod", steps=steps, stateful_types=STATEFUL, allow_replace=False)
    assert result == GateResult(
        "replacements",
        False,
        "the preview of prod would destroy data: delete kept-role (aws:iam/role:Role, protected); change the "
        "blueprint so these are kept, or pass --allow-replace to accept the loss",
    )


def test_replacement_gate_allows_with_allow_replace_and_says_protection_still_holds() -> None:
    steps = [step("replace", "aws:s3/bucket:Bucket", "bucket", protect=True)]
    result = replacement_gate(target="prod", steps=steps, stateful_types=STATEFUL, allow_replace=True)
    assert result == GateResult(
        "replacements",
        True,
        "1 destructive change(s) allowed by --allow-replace",
        (
            "allowed by --allow-replace: replace bucket (aws:s3/bucket:Bucket, protected and stateful)",
            "Pulumi still refuses to delete protected resources: unprotect them first (`protect: false` on "
            "the storage in the blueprint, or `pulumi state unprotect`)",
        ),
    )


def test_replacement_gate_refuses_a_failed_preview() -> None:
    result = replacement_gate(
        target="prod", steps=[], stateful_types=STATEFUL, allow_replace=True, preview_error="no credentials"
    )
    assert result == GateResult(
        "replacements",
        False,
        "the preview of prod failed (no credentials): fix it first (`clusterfab preview --stack prod` "
        "shows the whole output)",
    )


# --- budget ----------------------------------------------------------------------------------------
# Two p5.48xlarge on demand in us-east-1 at the catalog's $55.04 an hour: $110.08.


def test_budget_gate_passes_within_budget() -> None:
    assert budget_gate(target="prod", environment="prod", estimate=estimate(1000)) == GateResult(
        "budget", True, "prod (environment prod): within budget (hourly $110.08 of $1,000.00 limit)"
    )


def test_budget_gate_passes_without_a_budget() -> None:
    assert budget_gate(target="prod", environment=None, estimate=estimate(None)) == GateResult(
        "budget",
        True,
        "prod (the base blueprint): no budget set (add `budget: {max_hourly_usd: ...}` to check limits)",
    )


def test_budget_gate_refuses_over_budget() -> None:
    assert budget_gate(target="prod", environment="prod", estimate=estimate(100)) == GateResult(
        "budget",
        False,
        "prod (environment prod) would be OVER BUDGET (hourly $110.08 over the $100.00 limit): make the prod "
        "blueprint smaller or raise its budget (budget.max_hourly_usd / budget.max_monthly_usd)",
    )


def test_budget_gate_refuses_an_invalid_blueprint() -> None:
    result = budget_gate(target="prod", environment="prod", estimate=None, invalid_reason="x.yaml has errors")
    assert result == GateResult(
        "budget",
        False,
        "the blueprint cannot be costed for prod (environment prod): x.yaml has errors; fix it "
        "(`clusterfab validate BLUEPRINT --env prod`)",
    )


# --- all together ----------------------------------------------------------------------------------


def test_all_gates_pass() -> None:
    results = [
        digest_gate(),
        checked(health()),
        replacement_gate(target="prod", steps=[], stateful_types=STATEFUL, allow_replace=False),
        budget_gate(target="prod", environment="prod", estimate=estimate(1000)),
    ]
    assert results == [
        GateResult("blueprint", True, f"dev runs {BLUEPRINT} at digest aaaaaaaaaaaa"),
        GateResult(
            "health",
            True,
            "dev passed its health check at 2026-11-20T10:00:00+00:00 (commit cccccccccccc, "
            "bundle dddddddddddd)",
        ),
        NOTHING_DESTROYED,
        GateResult(
            "budget", True, "prod (environment prod): within budget (hourly $110.08 of $1,000.00 limit)"
        ),
    ]
    assert refusal("dev", "prod", results) is None


@pytest.mark.parametrize("failing", [1, 2])
def test_refusal_lists_every_failed_gate(failing: int) -> None:
    results = [
        digest_gate(source_outputs=outputs(digest=OTHER)),
        checked(None if failing == 2 else health()),
        budget_gate(target="prod", environment="prod", estimate=estimate(1000)),
    ]
    message = refusal("dev", "prod", results)
    assert message is not None
    expected = [
        f"promotion of dev to prod refused ({failing} of 3 gates failed):",
        f"  - blueprint: dev was last updated from another revision of {BLUEPRINT} (digest bbbbbbbbbbbb, "
        "the local file is aaaaaaaaaaaa): deploy this revision to dev first (`clusterfab up --stack dev`), "
        "check its health, then promote",
        f"  - health: no health check is recorded for dev ({LOCATION}): run the health check on dev "
        "(`clusterfab configure --stack dev`)",
    ]
    assert message.splitlines() == expected[: 1 + failing]
