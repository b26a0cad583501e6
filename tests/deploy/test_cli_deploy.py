"""preview / up / destroy / promote end to end: the CLI, the Automation API and a fake `pulumi` CLI.

Everything but the `pulumi` binary is real: the Typer commands and their error boundary, the
Automation API (workspace, stack selection, config, outputs, the file event log and its watcher
thread), the offline plan and cost diff between environments, and the gates.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from clusterfab import cli
from clusterfab.cli import live
from clusterfab.deploy import promote
from clusterfab.plan.compare import compare_environments
from tests.components.harness import plan_file
from tests.conftest import REPO
from tests.deploy.conftest import FakePulumi
from tests.factories import HEALTH_KEY, signed_record

BLUEPRINT = "blueprints/examples/aws-p5-efa-fsx.yaml"
DIGEST = hashlib.sha256((REPO / BLUEPRINT).read_bytes()).hexdigest()
FS = "aws:fsx/lustreFileSystem:LustreFileSystem"
VPC = "aws:ec2/vpc:Vpc"
_cached_compare = functools.cache(compare_environments)


@pytest.fixture(autouse=True)
def _fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan each (blueprint, environments) pair once per session; pin the date prices are judged by."""
    monkeypatch.setattr(promote, "compare_environments", _cached_compare)
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-22")


def run(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    tty: bool = False,
    answer: str | None = None,
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["clusterfab", *args])
    monkeypatch.setattr(live, "stdin_is_tty", lambda: tty)
    if answer is not None:
        monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), out, err


COMMIT = "0123456789abcdef0123456789abcdef01234567"
"""The checkout's commit as promote sees it (the real one may be dirty while tests run)."""


@functools.cache
def dev_outputs() -> dict[str, Any]:
    """The outputs of the dev stack: the offline plan's, exactly what the program exports."""
    return dict(plan_file(REPO / BLUEPRINT, "dev").outputs)


@pytest.fixture(autouse=True)
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The dev stack's cluster bucket in moto's S3, and a pinned checkout commit."""
    monkeypatch.setattr(promote, "checkout_commit", lambda root: COMMIT)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=dev_outputs()["bucket"])
        yield client


def health(status: str = "passed", digest: str = DIGEST, **changes: Any) -> str:
    """A health record as `configure` writes it for the dev stack."""
    blueprint = dev_outputs()["blueprint"]
    record = {
        "status": status,
        "stack": "dev",
        "blueprint_digest": digest,
        "bundle_sha256": blueprint["bundle_sha256"],
        "catalog_version": blueprint["catalog_version"],
        "commit": COMMIT,
        "checked_at": dt.datetime.now(dt.UTC).isoformat(),
        "hosts": {"trainers": 2},
        "required": {"trainers": 2},
        "reason": "" if status == "passed" else "the health check failed on at least one host",
        **changes,
    }
    return json.dumps(signed_record(record))


SIGNING_KEY = HEALTH_KEY
"""The dev stack's `health_signing_key` output (the offline plan shows only that it is a secret)."""


RECORD = "s3://llm-pretrain-artifacts-bucket-mock/health/dev.json"


def put_health(body: str) -> None:
    client = boto3.client("s3", region_name="us-east-1")
    client.put_object(Bucket=dev_outputs()["bucket"], Key="health/dev.json", Body=body.encode())


def stacks(
    fake: FakePulumi,
    *,
    blueprint: str = BLUEPRINT,
    digest: str = DIGEST,
    health_record: str | None = None,
    preview: list[dict[str, Any]] | None = None,
    up: list[dict[str, Any]] | None = None,
    history: list[dict[str, Any]] | None = None,
) -> None:
    dev_config = {"clusterfab:blueprint": blueprint, "clusterfab:environment": "dev"}
    outputs = dev_outputs()
    fake.add_stack(
        "dev",
        config=dev_config,
        outputs={
            **outputs,
            "blueprint": {**outputs["blueprint"], "digest": digest},
            "health_signing_key": SIGNING_KEY,
        },
        history=history or [{"kind": "update", "resourceChanges": {"create": 45}, "ago_s": 3600}],
    )
    put_health(health_record if health_record is not None else health(digest=digest))
    default_steps = [{"op": "create", "type": VPC, "name": "llm-pretrain-net-vpc"}]
    fake.add_stack(
        "prod",
        config={"clusterfab:blueprint": blueprint},  # environment: the stack name
        events={"preview": preview or up or default_steps, "up": up or preview or default_steps},
    )


PROTECTED_REPLACE = {"op": "replace", "type": FS, "name": "llm-pretrain-datasets-fs", "protect": True}


# --- promote ---------------------------------------------------------------------------------------


def test_promote_with_every_gate_passing_updates_the_target(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, out, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 0, err
    assert fake_pulumi.operations() == [("preview", "prod"), ("up", "prod")]
    assert "Preview of prod: 1 to create" in out
    shown = " ".join(out.split())  # the diff's title and items wrap to the terminal
    assert f"clusterfab diff: {BLUEPRINT} [dev] -> {BLUEPRINT} [prod] (environment prod)" in shown
    assert "~ trainers (node_group): p5.48xlarge x 2 -> 16, spot -> on_demand" in shown
    for gate in ("blueprint", "health", "replacements", "budget"):
        assert f"  ok      {gate}: " in out
    assert "Update of prod: 1 created" in out
    assert out.rstrip().endswith(f"promoted {BLUEPRINT} (digest {DIGEST[:12]}) from dev to prod")


def test_promote_refuses_listing_every_failed_gate(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi, digest="f" * 64, health_record=health(status="failed"), preview=[PROTECTED_REPLACE])
    code, out, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert fake_pulumi.operations() == [("preview", "prod")]  # never updated
    assert err.startswith("error: promotion of dev to prod refused (3 of 4 gates failed):\n")
    assert "  - blueprint: dev was last updated from another revision" in err
    assert (
        f"  - health: the health record {RECORD} does not pass: the last check failed (the health check "
        "failed on at least one host); run the health check on dev"
    ) in err
    assert "  - replacements: the preview of prod would destroy data: replace llm-pretrain-datasets-fs" in err
    assert "  REFUSED health:" in out
    assert "  ok      budget:" in out


def test_promote_refuses_without_a_health_check(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    bucket: Any,
) -> None:
    stacks(fake_pulumi)
    # A pass written where anyone who can `pulumi config set` could write it is never read.
    state = fake_pulumi.state()
    state["stacks"]["dev"]["config"]["clusterfab:health"] = health()
    fake_pulumi.write(state)
    bucket.delete_object(Bucket=dev_outputs()["bucket"], Key="health/dev.json")
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert (f"  - health: no health check is recorded for dev ({RECORD}): run the health check on dev") in err
    assert ("up", "prod") not in fake_pulumi.operations()


@pytest.mark.parametrize(
    ("record", "history", "problem"),
    [
        (
            {"commit": "f" * 40},
            None,
            f"it checked git commit ffffffffffff, this promotion is of {COMMIT[:12]}",
        ),
        ({"bundle_sha256": "e" * 64}, None, "it checked playbook bundle eeeeeeeeeeee, this promotion is of"),
        (
            {"catalog_version": "2025.01.01"},
            None,
            "it checked catalog version 2025.01.01, this promotion is of",
        ),
        ({"stack": "staging"}, None, "it records stack staging, not dev"),
        (
            {"hosts": {"trainers": 1}},
            None,
            "it passed on a partial fleet (trainers: 1 of at least 2 host(s) passed)",
        ),
        (
            {"checked_at": "2026-01-01T00:00:00+00:00"},
            None,
            "its checked_at (2026-01-01 00:00 UTC) is not when",
        ),
        (
            {},
            [{"kind": "update", "resourceChanges": {"update": 1}, "ago_s": -120}],
            "before dev's last update",
        ),
        ("not json", None, f"{RECORD} is not a health record (not JSON"),
    ],
    ids=["commit", "bundle", "catalog", "stack", "partial-fleet", "forged-time", "stale", "garbage"],
)
def test_promote_refuses_a_record_that_does_not_prove_this_revision_healthy(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    record: dict[str, Any] | str,
    history: list[dict[str, Any]] | None,
    problem: str,
) -> None:
    body = record if isinstance(record, str) else health(**record)
    stacks(fake_pulumi, health_record=body, history=history)
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert "(1 of 4 gates failed)" in err
    assert problem in err
    assert ("up", "prod") not in fake_pulumi.operations()


@pytest.mark.parametrize("key", [None, "6" * 64], ids=["unsigned", "other-key"])
def test_promote_refuses_a_passing_record_written_by_anyone_but_configure(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    key: str | None,
) -> None:
    # What anyone who may write the bucket (a node, a person with storage rights) but cannot read the
    # stack's secrets can put there: a record right in every field but its signature.
    record = {k: v for k, v in json.loads(health()).items() if k != "signature"}
    stacks(fake_pulumi, health_record=json.dumps(record if key is None else signed_record(record, key)))
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert "(1 of 4 gates failed)" in err
    problem = "it is not signed" if key is None else "its signature is not the stack's health signing key's"
    assert f"{problem}: it was not written by `clusterfab configure` for dev" in " ".join(err.split())
    assert ("up", "prod") not in fake_pulumi.operations()


def test_promote_refuses_a_record_older_than_the_maximum_age(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)
    monkeypatch.setattr(promote, "_now", lambda: later)
    args = ("promote", "--from", "dev", "--to", "prod", "--yes", "--health-max-age", "2")
    code, _, err = run(monkeypatch, capsys, *args)
    assert code == 1
    assert "it is 3 h old, more than 2 h" in err


def test_allow_replace_lets_a_destructive_promotion_through(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi, preview=[PROTECTED_REPLACE])
    args = ("promote", "--from", "dev", "--to", "prod", "--yes", "--allow-replace")
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 0, err
    assert "note: allowed by --allow-replace: replace llm-pretrain-datasets-fs" in out
    assert fake_pulumi.operations() == [("preview", "prod"), ("up", "prod")]


def test_promote_refuses_a_target_over_budget(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "small-budget.yaml"
    blueprint.write_text(
        (REPO / BLUEPRINT).read_text().replace("max_hourly_usd: 1000", "max_hourly_usd: 500")
    )
    stacks(fake_pulumi, blueprint=str(blueprint), digest=hashlib.sha256(blueprint.read_bytes()).hexdigest())
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert "(1 of 4 gates failed)" in err
    assert (
        "  - budget: prod (environment prod) would be OVER BUDGET (hourly $887.79 over the $500.00 limit"
        in err
    )


def test_promote_refuses_a_blueprint_invalid_for_the_target(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    blueprint = tmp_path / "bad-prod.yaml"
    text = (
        (REPO / BLUEPRINT)
        .read_text()
        .replace("  prod: {}", "  prod: {node_groups: [{name: trainers, count: 0}]}")
    )
    blueprint.write_text(text)
    stacks(fake_pulumi, blueprint=str(blueprint), digest=hashlib.sha256(blueprint.read_bytes()).hexdigest())
    code, out, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert "error[BP" in out  # the findings, on stdout as `clusterfab validate` prints them
    assert (
        f"  - budget: the blueprint cannot be costed for prod (environment prod): {blueprint} has errors"
        in err
    )


def test_promote_without_a_terminal_needs_yes_and_touches_nothing(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod")
    assert code == 2
    assert (
        err == "error: promote asks for confirmation, but stdin is not a terminal: pass --yes to go ahead\n"
    )
    assert fake_pulumi.calls() == []


@pytest.mark.parametrize(("answer", "code", "updated"), [("n\n", 1, False), ("y\n", 0, True)])
def test_promote_asks_on_a_terminal(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    answer: str,
    code: int,
    updated: bool,
) -> None:
    stacks(fake_pulumi)
    got, out, err = run(
        monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", tty=True, answer=answer
    )
    assert got == code, err
    assert "Promote dev to prod (update stack prod)? [y/N]" in out
    assert (("up", "prod") in fake_pulumi.operations()) is updated
    if not updated:
        assert err == "error: cancelled; nothing was changed\n"


def test_promote_reports_a_failed_update(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi, up=[{"op": "create", "type": VPC, "name": "vpc", "fail": "VpcLimitExceeded"}])
    code, out, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert "failed: aws:ec2/vpc:Vpc vpc\n    VpcLimitExceeded" in out
    assert err == "error: the update of prod failed: update failed\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--from", "dev", "--to", "dev"), "error: --from and --to are the same stack (dev)\n"),
        (("--from", "staging", "--to", "prod"), "error: stack staging does not exist: create it with"),
    ],
)
def test_promote_usage_errors(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    message: str,
) -> None:
    stacks(fake_pulumi)
    code, _, err = run(monkeypatch, capsys, "promote", *args, "--yes")
    assert code == 2
    assert err.startswith(message)
    assert len(err.strip().splitlines()) == 1


# --- without the CLI -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("preview", "--stack", "dev"),
        ("up", "--stack", "dev", "--yes"),
        ("destroy", "--stack", "dev", "--yes"),
        ("promote", "--from", "dev", "--to", "prod", "--yes"),
        ("inventory", "--stack", "dev"),
        ("configure", "--stack", "dev"),
    ],
)
def test_without_the_pulumi_cli_exit_2_with_one_line(
    no_pulumi: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
) -> None:
    code, out, err = run(monkeypatch, capsys, *args)
    assert code == 2
    assert out == ""
    assert err == (
        "error: the Pulumi CLI (`pulumi`) is not installed or not on PATH: install the Pulumi CLI "
        "(https://www.pulumi.com/docs/install/), log in to a state backend with `pulumi login`, then run "
        "this again\n"
    )


# --- preview / up / destroy ------------------------------------------------------------------------


def test_preview(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi, preview=[{"op": "create", "type": VPC, "name": "vpc"}, PROTECTED_REPLACE])
    code, out, _ = run(monkeypatch, capsys, "preview", "--stack", "prod")
    assert code == 0
    assert out.splitlines() == [
        " + to create  aws:ec2/vpc:Vpc  vpc",
        "+- to replace aws:fsx/lustreFileSystem:LustreFileSystem  llm-pretrain-datasets-fs",
        "Preview of prod: 1 to create, 1 to replace",
    ]
    assert fake_pulumi.operations() == [("preview", "prod")]


def test_a_failed_preview_exits_1(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pulumi.add_stack("dev", fail={"preview": "no valid credential sources for AWS Provider found"})
    code, _, err = run(monkeypatch, capsys, "preview", "--stack", "dev")
    assert code == 1
    assert err == "error: the preview of dev failed: no valid credential sources for AWS Provider found\n"


def test_up_with_yes_updates_without_a_preview(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, out, _ = run(monkeypatch, capsys, "up", "--stack", "dev", "--yes")
    assert code == 0
    assert fake_pulumi.operations() == [("up", "dev")]
    assert "Update of dev: no changes" in out


def test_up_on_a_terminal_previews_then_asks(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, out, _ = run(monkeypatch, capsys, "up", "--stack", "prod", tty=True, answer="y\n")
    assert code == 0
    assert "Update stack prod? [y/N]" in out
    assert fake_pulumi.operations() == [("preview", "prod"), ("up", "prod")]


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def _engine_calls(fake: FakePulumi) -> list[tuple[str, str | None, str | None, str | None]]:
    """(operation, --save-plan, --plan, --policy-pack) of each preview / up the CLI ran."""
    return [
        (argv[0], _option(argv, "--save-plan"), _option(argv, "--plan"), _option(argv, "--policy-pack"))
        for argv in ([a for a in call if a != "--non-interactive"] for call in fake.calls())
        if argv and argv[0] in {"preview", "up"}
    ]


def test_up_after_a_preview_runs_exactly_the_previewed_plan_under_the_policy_pack(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, _, err = run(monkeypatch, capsys, "up", "--stack", "prod", tty=True, answer="y\n")
    assert code == 0, err
    (preview, saved, _, pack), (up, _, held, up_pack) = _engine_calls(fake_pulumi)
    assert (preview, up) == ("preview", "up")
    assert saved is not None
    assert held == saved
    assert pack == up_pack == str(REPO / "policy")


def test_up_refuses_when_the_engine_would_leave_the_previewed_plan(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    preview = [{"op": "update", "type": VPC, "name": "llm-pretrain-net-vpc"}]
    stacks(fake_pulumi, preview=preview, up=[PROTECTED_REPLACE])
    code, _, err = run(monkeypatch, capsys, "up", "--stack", "prod", tty=True, answer="y\n")
    assert code == 1
    assert "resource violates plan: replace is not allowed" in err


@pytest.mark.parametrize("what", ["blueprint", "config"])
def test_up_refuses_when_the_blueprint_or_config_changed_while_asking(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    what: str,
) -> None:
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text((REPO / BLUEPRINT).read_text())
    stacks(fake_pulumi, blueprint=str(blueprint))
    asked = live.confirm

    def meanwhile(question: str, yes: bool) -> None:
        asked(question, yes)
        if what == "blueprint":
            blueprint.write_text(blueprint.read_text().replace("count: 16", "count: 8"))
        else:
            state = fake_pulumi.state()
            state["stacks"]["prod"]["config"]["clusterfab:environment"] = "dev"
            fake_pulumi.write(state)

    monkeypatch.setattr(live, "confirm", meanwhile)
    code, _, err = run(monkeypatch, capsys, "up", "--stack", "prod", tty=True, answer="y\n")
    assert code == 1
    changed = (
        "the blueprint bp.yaml changed since the preview"
        if what == "blueprint"
        else "the config of stack prod changed since the preview (clusterfab:environment)"
    )
    assert err.startswith(f"error: not updating prod: {changed}")
    assert err.rstrip().endswith("preview again and approve what is there now")
    assert fake_pulumi.operations() == [("preview", "prod")]


def test_promote_updates_with_the_plan_the_gates_saw_and_refuses_a_blueprint_changed_since(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    stacks(fake_pulumi)
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 0, err
    (_, saved, _, _), (_, _, held, _) = _engine_calls(fake_pulumi)
    assert held == saved is not None
    blueprint = tmp_path / "bp.yaml"
    blueprint.write_text((REPO / BLUEPRINT).read_text())
    stacks(fake_pulumi, blueprint=str(blueprint), digest=hashlib.sha256(blueprint.read_bytes()).hexdigest())
    asked = live.confirm

    def meanwhile(question: str, yes: bool) -> None:
        asked(question, yes)
        blueprint.write_text(blueprint.read_text() + "# edited while the gates ran\n")

    monkeypatch.setattr(live, "confirm", meanwhile)
    code, _, err = run(monkeypatch, capsys, "promote", "--from", "dev", "--to", "prod", "--yes")
    assert code == 1
    assert err.startswith("error: not updating prod: the blueprint bp.yaml changed since the preview")
    assert ("up", "prod") not in fake_pulumi.operations()[2:]


def test_up_without_a_terminal_needs_yes(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stacks(fake_pulumi)
    code, _, err = run(monkeypatch, capsys, "up", "--stack", "prod")
    assert code == 2
    assert "pass --yes" in err
    assert fake_pulumi.calls() == []


def test_destroy_refuses_protected_resources(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fs = f"urn:pulumi:prod::clusterfab::{FS}::llm-pretrain-datasets-fs"
    fake_pulumi.add_stack("prod", resources=[{"urn": fs, "type": FS, "protect": True}])
    code, _, err = run(monkeypatch, capsys, "destroy", "--stack", "prod", "--yes")
    assert code == 1
    assert err.startswith(
        f"error: stack prod has 1 protected resource(s): llm-pretrain-datasets-fs ({FS}); destroy does not "
        "delete protected resources (they hold data): unprotect them first"
    )
    assert fake_pulumi.operations() == []


def test_destroy_with_yes(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    vpc = f"urn:pulumi:dev::clusterfab::{VPC}::vpc"
    fake_pulumi.add_stack(
        "dev",
        resources=[{"urn": vpc, "type": VPC, "protect": False}],
        events={"destroy": [{"op": "delete", "type": VPC, "name": "vpc"}]},
    )
    code, out, _ = run(monkeypatch, capsys, "destroy", "--stack", "dev", "--yes")
    assert code == 0
    assert " - deleted    aws:ec2/vpc:Vpc  vpc" in out
    assert "Destroy of dev: 1 deleted" in out
    assert fake_pulumi.operations() == [("destroy", "dev")]


def test_destroy_runs_the_program_so_that_the_delete_hooks_run(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A Slurm cluster's node groups carry the delete hook that tears down the instances Slurm created: the
    # engine runs it only when destroy runs the program, and refuses to destroy without it.
    group = "aws:autoscaling/group:Group"
    fake_pulumi.add_stack(
        "dev",
        delete_hooks=True,
        events={
            "preview-destroy": [{"op": "delete", "type": group, "name": "llm-h100-asg"}],
            "destroy": [{"op": "delete", "type": group, "name": "llm-h100-asg"}],
        },
    )
    code, out, _ = run(monkeypatch, capsys, "destroy", "--stack", "dev", tty=True, answer="y\n")
    assert code == 0
    assert "Destroy of dev: 1 deleted" in out
    calls = [[a for a in argv if a != "--non-interactive"] for argv in fake_pulumi.calls()]
    destroys = [argv for argv in calls if argv and argv[0] == "destroy"]
    assert [("--preview-only" in argv, "--run-program=true" in argv) for argv in destroys] == [
        (True, True),
        (False, True),
    ]


def test_destroy_on_a_terminal_shows_what_goes_and_can_be_declined(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_pulumi.add_stack("dev", events={"preview-destroy": [{"op": "delete", "type": VPC, "name": "vpc"}]})
    code, out, err = run(monkeypatch, capsys, "destroy", "--stack", "dev", tty=True, answer="n\n")
    assert code == 1
    assert " - to delete  aws:ec2/vpc:Vpc  vpc" in out
    assert "Delete every resource of stack dev? [y/N]" in out
    assert err == "error: cancelled; nothing was changed\n"
    assert fake_pulumi.operations() == [("preview-destroy", "dev")]


# --- push mode -------------------------------------------------------------------------------------


def test_inventory_prints_the_plugin_config_from_the_stack_outputs(
    fake_pulumi: FakePulumi,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    outputs = {
        "blueprint": {
            "name": "llm-pretrain",
            "file": BLUEPRINT,
            "digest": DIGEST,
            "bundle_sha256": "b" * 64,
            "environment": "dev",
            "catalog_version": "2026.11.22",
            "cloud": "aws",
            "region": "us-east-1",
            "zone": "use1-az6",
        },
        "network": {},
        "bucket": "llm-pretrain-artifacts-abc",
        "node_selector": {"tag:clusterfab-blueprint": "llm-pretrain", "tag:clusterfab-stack": "dev"},
    }
    fake_pulumi.add_stack("dev", config={"clusterfab:blueprint": BLUEPRINT}, outputs=outputs)
    code, out, err = run(monkeypatch, capsys, "inventory", "--stack", "dev")
    assert code == 0, err
    assert out.startswith("plugin: amazon.aws.aws_ec2\nregions:\n- us-east-1\nfilters:\n")
    assert "ansible_aws_ssm_bucket_name: \"'llm-pretrain-artifacts-abc'\"" in out
    code, out, err = run(monkeypatch, capsys, "inventory", "--stack", "dev", "-o", str(tmp_path / "dev.yml"))
    assert (code, err.strip()) == (
        2,
        f"error: the inventory plugin reads only files named *.aws_ec2.yml; got {tmp_path / 'dev.yml'}",
    )
    target = tmp_path / "dev.aws_ec2.yml"
    code, out, err = run(monkeypatch, capsys, "inventory", "--stack", "dev", "-o", str(target))
    assert code == 0, err
    assert target.read_text().startswith("plugin: amazon.aws.aws_ec2\n")


def test_configure_refuses_a_stack_without_a_signing_key(
    fake_pulumi: FakePulumi, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A stack last updated before records were signed: nothing would verify what configure writes.
    outputs = {k: v for k, v in dev_outputs().items() if k != "health_signing_key"}
    fake_pulumi.add_stack(
        "dev", config={"clusterfab:blueprint": BLUEPRINT, "clusterfab:environment": "dev"}, outputs=outputs
    )
    code, _, err = run(monkeypatch, capsys, "configure", "--stack", "dev")
    assert code == 2
    assert " ".join(err.split()) == (
        "error: dev has no health signing key (it was last updated by an older clusterfab): update it "
        "(`clusterfab up --stack dev`), then configure it"
    )
