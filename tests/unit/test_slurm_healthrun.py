"""`clusterfab health`: the command that reaches the controller (SSM / IAP), the deep check's reports as
the Slurm lab printed them (tests/fixtures/health/reports) read and shown per node, and its exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from clusterfab import cli
from clusterfab.catalog import load_catalog
from clusterfab.cli import health as health_command
from clusterfab.cli import live
from clusterfab.core.errors import UsageError
from clusterfab.outputs import read_outputs
from clusterfab.scheduler.slurm import healthrun
from clusterfab.scheduler.slurm.healthrun import (
    NodeRow,
    expand_hostlist,
    find_report,
    health_argv,
    read_report,
)
from clusterfab.scheduler.slurm.hostvars import controller_vars, health_files
from tests.conftest import REPO, assert_golden
from tests.factories import example_spec
from tests.json_contract import check_document
from tests.labs import LIVE_CLOUD, require

REPORTS = REPO / "tests" / "fixtures" / "health" / "reports"
SCHEDULER = {
    "aws": {"kind": "slurm", "controller": "i-0c0ffee", "controller_address": "10.0.0.10", "login": [],
            "munge_secret": "arn:aws:secretsmanager:us-east-1:1:secret:m"},
    "gcp": {"kind": "slurm", "controller": "llm-slurm-controller", "controller_address": "10.0.0.10",
            "login": [], "munge_secret": "projects/p-123456/secrets/m"},
}  # fmt: skip


def _outputs(cloud: str, scheduler: dict[str, Any] | None = None, project: str | None = "p-123456") -> Any:
    zone, region = ("use1-az6", "us-east-1") if cloud == "aws" else ("us-central1-a", "us-central1")
    return {
        "blueprint": {"name": "llm", "file": "bp.yaml", "digest": "0" * 64, "bundle_sha256": "1" * 64,
                      "environment": "prod", "catalog_version": "x", "cloud": cloud, "region": region,
                      "zone": zone, "project": project if cloud == "gcp" else None},
        "network": {}, "bucket": "b", "node_selector": {}, "scheduler": scheduler,
    }  # fmt: skip


def _report(name: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((REPORTS / f"{name}.json").read_text())
    return document


# ------------------------------------------------------------------------------------ reaching the host
def test_on_aws_the_check_runs_in_an_ssm_interactive_command_session() -> None:
    argv = health_argv(read_outputs(_outputs("aws", SCHEDULER["aws"])), 3)
    assert argv == [
        "aws", "ssm", "start-session", "--region", "us-east-1", "--target", "i-0c0ffee",
        "--document-name", "AWS-StartInteractiveCommand",
        "--parameters",
        '{"command":["sudo -n /usr/local/sbin/clusterfab-slurm-healthcheck --level 3 --json"]}',
    ]  # fmt: skip


def test_on_gcp_the_check_runs_over_ssh_through_iap() -> None:
    argv = health_argv(read_outputs(_outputs("gcp", SCHEDULER["gcp"])), 1, ["trainers-0", "trainers-2"])
    assert argv == [
        "gcloud", "compute", "ssh", "llm-slurm-controller", "--zone=us-central1-a", "--project=p-123456",
        "--tunnel-through-iap",
        "--command=sudo -n /usr/local/sbin/clusterfab-slurm-healthcheck --level 1 "
        "--nodes trainers-0,trainers-2 --json",
    ]  # fmt: skip


def test_the_tools_checked_before_a_run_are_the_ones_it_runs() -> None:
    """`clusterfab health` and `clusterfab dashboard` refuse early when the cloud profile's host access
    tools are missing: the commands they build start with one of them (the AWS CLI runs the
    session-manager-plugin itself)."""
    from clusterfab.clouds import profile

    for cloud in ("aws", "gcp"):
        tools = profile(cloud).host_access_tools
        assert health_argv(read_outputs(_outputs(cloud, SCHEDULER[cloud])), 3)[0] in tools
    assert profile("aws").host_access_tools == ("aws", "session-manager-plugin")


def test_the_node_list_stays_one_value_in_the_ssm_parameters() -> None:
    # The CLI's shorthand (command=...) would split the command at the comma of the node list.
    argv = health_argv(read_outputs(_outputs("aws", SCHEDULER["aws"])), 2, expand_hostlist("trainers-[0-1]"))
    command = (
        "sudo -n /usr/local/sbin/clusterfab-slurm-healthcheck --level 2 --nodes trainers-0,trainers-1 --json"
    )
    assert json.loads(argv[-1]) == {"command": [command]}


def test_the_remote_command_is_quoted_for_the_shell() -> None:
    # Node names are checked before they get here; the quoting holds even for one that was not.
    argv = health_argv(read_outputs(_outputs("gcp", SCHEDULER["gcp"])), 3, ["a;reboot"])
    assert argv[-1] == (
        "--command=sudo -n /usr/local/sbin/clusterfab-slurm-healthcheck --level 3 --nodes 'a;reboot' --json"
    )


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        pytest.param("trainers-3", ["trainers-3"], id="one"),
        pytest.param("trainers-[0-2],b-1", ["trainers-0", "trainers-1", "trainers-2", "b-1"], id="range"),
        pytest.param("n[08-10]", ["n08", "n09", "n10"], id="padded"),
        pytest.param("g-[0,3-4]-x,g-0-x", ["g-0-x", "g-3-x", "g-4-x"], id="list-and-duplicate"),
    ],
)
def test_hostlists_expand_to_node_names(expression: str, names: list[str]) -> None:
    assert expand_hostlist(expression) == names


def test_what_slurm_conf_names_expands_back_to_its_nodes() -> None:
    from clusterfab.scheduler.slurm.hostlist import expand, hostlist, join

    written = join([hostlist("h100", 4, start=2), hostlist("login", 1)])
    assert written == "h100-[2-5],login-0"
    assert expand(written) == ["h100-2", "h100-3", "h100-4", "h100-5", "login-0"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        pytest.param("a;reboot", "'a;reboot' is not a node name or a hostlist", id="shell"),
        pytest.param("t-[3-1]", "'3-1' in 't-[3-1]' is not a range", id="backwards"),
        pytest.param("t-[0-1", "is not a hostlist like", id="unclosed"),
        pytest.param("a,,b", "is not a hostlist like", id="empty"),
    ],
)
def test_a_bad_hostlist_is_a_usage_error(expression: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("(", r"\(")):
        expand_hostlist(expression)


def test_a_stack_without_slurm_says_how_to_get_it() -> None:
    with pytest.raises(UsageError, match=r"has no Slurm controller: set scheduler\.kind: slurm"):
        health_argv(read_outputs(_outputs("aws")), 3)


def test_gcp_outputs_without_a_project_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="name no GCP project; run `clusterfab up`"):
        health_argv(read_outputs(_outputs("gcp", SCHEDULER["gcp"], project=None)), 3)


def test_a_level_outside_dcgm_levels_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--level must be 1, 2 or 3, not 4"):
        health_argv(read_outputs(_outputs("aws", SCHEDULER["aws"])), 4)


def test_the_role_installs_the_program_where_the_command_runs_it() -> None:
    role = REPO / "playbooks" / "roles" / "slurm_controller"
    variables = yaml.safe_load((role / "vars" / "main.yml").read_text())
    assert variables["__slurm_controller_health_command"] == "/usr/local/sbin/clusterfab-slurm-healthcheck"
    # ... with the program and settings the controller's archive ships (stacks/slurm_common.py slurm_files).
    spec = example_spec("aws-p5-slurm", env="prod")
    extravars = controller_vars(spec, load_catalog().slurm, stack="prod", files_dir="/opt/f")
    assert set(health_files(spec, load_catalog().pair_bandwidth)) == {
        "bin/clusterfab-slurm-healthcheck",
        "bin/clusterfab_slurm_ibpair.py",  # the InfiniBand pair step, imported from the program's directory
        "healthcheck.json",
    }
    assert (extravars["slurm_controller_health_program"], extravars["slurm_controller_health_config"]) == (
        "/opt/f/bin/clusterfab-slurm-healthcheck",
        "/opt/f/healthcheck.json",
    )


# ------------------------------------------------------------------------------------------ the report
def test_a_failed_dcgm_level_3_node_and_the_pairs_bandwidth() -> None:
    report = read_report(_report("level3-dcgm-failed"))
    detail = (
        "level 3 memory failed on GPU 5: GPU 5 Thermal violations totaling 13.3 seconds started at 9.7 "
        "seconds into the test for GPU 5 Verify that the cooling on this machine is functional"
    )
    assert report.rows == (
        NodeRow("trainers-0", "healthy", "", "busbw 188.73 GB/s with trainers-2 (floor 160)"),
        NodeRow("trainers-1", "failed", "DCGM", detail),
        NodeRow("trainers-2", "healthy", "", "busbw 188.73 GB/s with trainers-0 (floor 160)"),
    )
    assert (report.healthy, report.exit_code) == (False, 1)


def test_a_busy_node_is_skipped_and_a_hanging_pair_fails_both() -> None:
    report = read_report(_report("level1-busy-and-hanging-nccl"))
    hang = "all_reduce_perf did not finish within 20s (trainers-1 and trainers-2)"
    assert report.rows == (
        NodeRow("trainers-0", "skipped", "", "not idle (ALLOCATED)"),
        NodeRow("trainers-1", "failed", "PERF", hang),
        NodeRow("trainers-2", "failed", "PERF", hang),
    )
    assert report.exit_code == 1


def test_a_check_that_did_not_complete_exits_2_with_what_it_found() -> None:
    report = read_report(_report("level3-not-one-world"))
    assert str(report.error).startswith("all_reduce_perf ran 1 rank(s) on 2 host(s)")
    assert [(row.node, row.status, row.category) for row in report.rows] == [
        ("trainers-0", "healthy", ""),
        ("trainers-1", "failed", "DCGM"),
        ("trainers-2", "healthy", ""),
    ]
    assert report.rows[0].detail == "DCGM passed; NCCL test not measured (see the error)"
    assert (report.healthy, report.exit_code) == (False, 2)
    # Without a failed node it is still not healthy: the pairs were never measured.
    document = _report("level3-not-one-world")
    document["nodes"] = [n for n in document["nodes"] if n["status"] == "healthy"]
    assert read_report(document).exit_code == 2


def test_the_table_says_why_the_check_did_not_complete(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (REPORTS / "level3-not-one-world.json").read_text()
    code, out, _, _ = _cli(monkeypatch, capsys, _outputs("aws", SCHEDULER["aws"]), lines=[line])
    assert code == 2
    text = " ".join(out.split())
    assert (
        "the check did not complete: all_reduce_perf ran 1 rank(s) on 2 host(s), not one test of 16" in text
    )


def test_a_report_without_failed_nodes_exits_0() -> None:
    document = _report("level3-dcgm-failed")
    document["nodes"] = [n for n in document["nodes"] if n["status"] == "healthy"]
    assert read_report(document).exit_code == 0
    document["nodes"][0] |= {"floor_gbytes_per_s": None}
    assert read_report(document).rows[0].detail == (
        "busbw 188.73 GB/s with trainers-2 (no floor in the catalog)"
    )


def test_the_report_is_found_in_a_sessions_terminal_output() -> None:
    # What an SSM interactive session prints: the plugin's lines, the check's progress (its stderr on the
    # same terminal) and the report, with the terminal's line endings.
    line = (REPORTS / "level1-busy-and-hanging-nccl.json").read_text().strip()
    session = [
        "\r\n",
        "Starting session with SessionId: alice-0a1b2c3d4e5f\r\n",
        "could not delete reservation clusterfab-health-1: {not json\r\n",
        f"{line}\r\n",
        "\r\n",
        "\r\n",
        "Exiting session with sessionId: alice-0a1b2c3d4e5f.\r\n",
    ]
    assert find_report(session).document == json.loads(line)


def test_no_report_is_an_error_that_says_what_to_check() -> None:
    with pytest.raises(UsageError, match="the deep check printed no report"):
        find_report(["sudo: a password is required\r\n", '{"other": 1}\n'])


def test_a_report_of_another_schema_version_is_refused() -> None:
    document = _report("level3-dcgm-failed") | {"schema_version": 2}
    with pytest.raises(UsageError, match="schema_version 2; this clusterfab reads 1"):
        read_report(document)


def test_the_recorded_reports_satisfy_the_documented_contract() -> None:
    for path in sorted(REPORTS.glob("*.json")):
        check_document(json.loads(path.read_text()), "health")


# ---------------------------------------------------------------------------------------------- the CLI
def _cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outputs: dict[str, Any],
    *args: str,
    lines: list[str] | None = None,
    missing: list[str] | None = None,
) -> tuple[int, str, str, list[list[str]]]:
    """Run `clusterfab health` in this process with the stack's outputs and the session's lines given."""
    ran: list[list[str]] = []

    def remote(argv: list[str], progress: object) -> list[str]:
        ran.append(list(argv))
        return lines or []

    project = SimpleNamespace(stack=lambda name: SimpleNamespace(outputs=lambda: outputs))
    monkeypatch.setattr(live, "deploy_project", lambda: project)
    monkeypatch.setattr(healthrun, "remote_lines", remote)
    monkeypatch.setattr("clusterfab.clouds.missing_host_tools", lambda cloud: missing or [])
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setattr(sys, "argv", ["clusterfab", "health", "--stack", "prod", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err, ran


def test_the_command_shows_a_row_per_node_and_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (REPORTS / "level1-busy-and-hanging-nccl.json").read_text()
    code, out, err, ran = _cli(
        monkeypatch, capsys, _outputs("aws", SCHEDULER["aws"]), "--level", "1", lines=[line]
    )
    assert (code, err) == (1, "")
    assert ran == [
        ["aws", "ssm", "start-session", "--region", "us-east-1", "--target", "i-0c0ffee",
         "--document-name", "AWS-StartInteractiveCommand", "--parameters",
         '{"command":["sudo -n /usr/local/sbin/clusterfab-slurm-healthcheck --level 1 --json"]}'],
    ]  # fmt: skip
    # tests/golden/health/level1-busy-and-hanging-nccl.txt: node, status, category, detail per node
    text = "".join(f"{line.rstrip()}\n" for line in out.splitlines())
    assert_golden("health/level1-busy-and-hanging-nccl.txt", text)


def test_the_json_output_is_the_controllers_report(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    line = (REPORTS / "level3-dcgm-failed.json").read_text()
    code, out, _, ran = _cli(
        monkeypatch, capsys, _outputs("gcp", SCHEDULER["gcp"]), "--nodes", "trainers-[0-2]", "-f", "json",
        lines=["Warning: Permanently added 'compute.1' (ED25519) to the list of known hosts.\n", line],
    )  # fmt: skip
    assert code == 1
    assert json.loads(out) == json.loads(line)
    check_document(json.loads(out), "health")
    assert ran[0][-1].endswith("--level 3 --nodes trainers-0,trainers-1,trainers-2 --json")


@pytest.mark.parametrize(
    ("outputs", "args", "missing", "message"),
    [
        pytest.param(
            _outputs("aws"), [], None, "has no scheduler to run the check: set scheduler.kind: slurm or",
            id="no-scheduler",
        ),
        pytest.param({"network": {}}, [], None, "the stack's outputs are not clusterfab's", id="not-ours"),
        pytest.param(
            _outputs("aws", SCHEDULER["aws"]), [], ["session-manager-plugin"],
            "clusterfab health needs session-manager-plugin on PATH", id="no-plugin",
        ),
        pytest.param(_outputs("aws", SCHEDULER["aws"]), ["--nodes", "x;y"], None, "'x;y' is not", id="nodes"),
        pytest.param(_outputs("aws", SCHEDULER["aws"]), ["--level", "4"], None, "--level", id="level"),
        pytest.param(
            _outputs("aws", SCHEDULER["aws"]), [], None, "the deep check printed no report", id="no-report"
        ),
    ],
)  # fmt: skip
def test_what_keeps_the_check_from_running_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    outputs: dict[str, Any],
    args: list[str],
    missing: list[str] | None,
    message: str,
) -> None:
    code, out, err, _ = _cli(monkeypatch, capsys, outputs, *args, missing=missing)
    assert code == 2
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_the_health_command_against_a_real_stack() -> None:
    """Needs the Pulumi CLI, a deployed Slurm stack (CLUSTERFAB_LIVE_STACK) and the cloud's CLI and
    credentials; it drains nodes that fail, so it runs only on request. Skips otherwise."""
    stack = os.environ.get("CLUSTERFAB_LIVE_STACK", "")
    requested = os.environ.get("CLUSTERFAB_LIVE_HEALTH") == "1"
    require(
        shutil.which("pulumi") is not None and bool(stack) and requested,
        "needs the Pulumi CLI, CLUSTERFAB_LIVE_STACK naming a deployed Slurm stack, the cloud's CLI with "
        "credentials, and CLUSTERFAB_LIVE_HEALTH=1 (the check drains failing nodes)",
        ci_exempt=LIVE_CLOUD,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", "health", "--stack", stack, "--level", "1", "--format", "json"],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=3600,
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    check_document(json.loads(proc.stdout), "health")


def test_the_sessions_lines_are_kept_and_its_progress_goes_to_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    program = "print('reserving 3 nodes\\r'); print('{\"nodes\": []}'); raise SystemExit(3)"
    lines = healthrun.remote_lines([sys.executable, "-c", program], health_command.progress)
    # A terminal's \r\n reads as \n (universal newlines); the exit status is the report's business.
    assert lines == ["reserving 3 nodes\n", '{"nodes": []}\n']
    assert capsys.readouterr().err == "reserving 3 nodes\n"


def test_on_azure_the_report_comes_back_through_the_health_container(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run Command returns only the last 4096 bytes of the script's output: the controller stores the
    report in the cluster's clusterfab-health container, and the CLI reads that blob back."""
    from clusterfab.clouds.azure.access import upload_command
    from clusterfab.clouds.azure.store import AzureBlobHealthStore

    controller = (
        "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg1/providers/Microsoft.Compute/"
        "virtualMachines/llm-slurm-controller"
    )
    outputs = {
        "blueprint": {"name": "llm", "file": "bp.yaml", "digest": "0" * 64, "bundle_sha256": "1" * 64,
                      "environment": "prod", "catalog_version": "x", "cloud": "azure",
                      "region": "southcentralus", "zone": "1"},
        "network": {}, "bucket": "acct/artifacts", "node_selector": {},
        "scheduler": {"kind": "slurm", "controller": controller, "controller_address": "10.20.16.10",
                      "login": [], "munge_secret": "https://kv.vault.azure.net/secrets/m"},
    }  # fmt: skip
    report = (REPORTS / "level3-dcgm-failed.json").read_text()
    read: list[str] = []

    def stored(store: AzureBlobHealthStore, key: str) -> object:
        read.append(store.location(key))
        return SimpleNamespace(body=report.encode())

    monkeypatch.setattr(AzureBlobHealthStore, "get", stored)
    monkeypatch.setattr(healthrun.uuid, "uuid4", lambda: SimpleNamespace(hex="r1"))
    code, out, _, ran = _cli(
        monkeypatch, capsys, outputs, "--level", "3", "-f", "json", lines=["[stdout]\n", "[stderr]\n"]
    )
    assert code == 1
    assert json.loads(out) == json.loads(report)
    url = "https://acct.blob.core.windows.net/clusterfab-health/health-reports/r1.json"
    assert read == [url]
    program = "/usr/local/sbin/clusterfab-slurm-healthcheck"
    assert ran == [
        ["az", "vm", "run-command", "invoke",
         "--subscription", "00000000-0000-0000-0000-000000000000", "--resource-group", "rg1",
         "--name", "llm-slurm-controller", "--command-id", "RunShellScript",
         "--scripts", upload_command(f"sudo -n {program} --level 3 --json", url),
         "--query", "value[0].message", "--output", "tsv"],
    ]  # fmt: skip
