"""The CLI's output conventions (docs/cli.md): findings on stdout for every command in every format,
errors of the command line on stderr (or as a JSON object in JSON mode), text that fits an 80 to 120
column terminal, and the shared options (--version, -h, -s/--stack)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import pytest

from clusterfab import cli
from clusterfab.catalog import load_catalog
from clusterfab.cli.options import stack_name
from tests.conftest import BAD_FIXTURES, REPO

EXAMPLE = "blueprints/examples/aws-p5-efa-fsx.yaml"
BAD = str(BAD_FIXTURES / "BP104-tpu-topology.yaml")


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-22")


def run(*args: str, columns: int = 120) -> tuple[int, str, str]:
    """The CLI in this process, its error boundary included: (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        patch.setattr(sys, "argv", ["clusterfab", *args])
        patch.setenv("COLUMNS", str(columns))
        with pytest.raises(SystemExit) as exited:
            cli.main()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize(
    "args",
    [["validate", BAD], ["cost", BAD], ["plan", BAD], ["diff", EXAMPLE, BAD]],
    ids=["validate", "cost", "plan", "diff"],
)
def test_findings_go_to_stdout_for_every_command(args: list[str]) -> None:
    code, out, err = run(*args)
    assert (code, err) == (1, "")
    assert f"{BAD}:11:15: error[BP104] tpu_slices[0].topology: '4x4x3' is not a v5p topology" in out
    assert out.rstrip().splitlines()[-1].startswith(f"{BAD}: invalid (1 error, 0 warnings, 0 notes")


@pytest.mark.parametrize("command", ["validate", "cost", "diff"])
def test_markdown_of_an_invalid_blueprint_is_the_findings(command: str) -> None:
    args = [command, EXAMPLE, BAD] if command == "diff" else [command, BAD]
    code, out, err = run(*args, "--format", "markdown")
    assert (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[0] == f"### clusterfab {command}: `{BAD}` is invalid"
    assert "| Severity | Code | Where | Field | Problem | Hint |" in lines
    assert (
        f"| error | BP104 | `{BAD}:11:15` | `tpu_slices[0].topology` | '4x4x3' is not a v5p topology | "
        in out
    )
    assert "```text" in lines  # the source lines with carets, folded


SLURM = "blueprints/examples/aws-p5-slurm.yaml"


@pytest.mark.parametrize("output", ["text", "markdown"])
def test_cost_carries_the_blueprints_findings_in_every_format(output: str) -> None:
    code, out, err = run("cost", SLURM, "--format", output)
    assert (code, err) == (0, "")
    if output == "text":
        assert (
            f"{SLURM}:50:9: warning[BP151] monitoring.smtp: alerts for ml-infra@example.com are not "
            "e-mailed: monitoring.smtp names no mail relay"
        ) in out.splitlines()
        return
    lines = out.splitlines()
    assert lines[lines.index("**Findings** (0 errors, 1 warning, 0 notes)") + 2 :][:3] == [
        "| Severity | Code | Where | Field | Problem | Hint |",
        "|---|---|---|---|---|---|",
        f"| warning | BP151 | `{SLURM}:50:9` | `monitoring.smtp` | alerts for ml-infra@example.com are not "
        "e-mailed: monitoring.smtp names no mail relay | add monitoring.smtp: {smarthost: HOST:587, sender: "
        "alerts@example.com, username: ..., password_secret: SECRET}; until then alerts show in Grafana and "
        "Alertmanager only |",
    ]


def test_usage_errors_are_one_line_on_stderr_and_nothing_on_stdout() -> None:
    assert run("validate", "no/such.yaml") == (2, "", "error: no such file: no/such.yaml\n")
    code, out, err = run("plan", EXAMPLE, "-s", "not/a/valid/stack")
    assert (code, out) == (2, "")
    assert "Invalid value for '--stack' / '-s': 'not/a/valid/stack' is not a Pulumi stack name" in err


@pytest.mark.parametrize("command", ["preview", "up", "destroy"])
def test_a_blueprint_file_given_to_a_command_that_deploys_a_stack_is_explained(command: str) -> None:
    # As plan and cost are run; the stack's config names the blueprint. Said before the Pulumi CLI is
    # looked for (this machine has none), with the command to run instead.
    yes = [] if command == "preview" else ["--yes"]
    assert run(command, EXAMPLE, "--stack", "dev", *yes) == (
        2,
        "",
        f"error: {command} takes no blueprint file ({EXAMPLE}): the stack's config names the blueprint it "
        f"deploys (clusterfab:blueprint in stacks/Pulumi.<stack>.yaml); run `clusterfab {command} --stack "
        "STACK`\n",
    )
    code, out, _ = run(command, "-h")
    assert (code, out.splitlines()[0]) == (0, f"Usage: clusterfab {command} [OPTIONS]")


def test_a_yaml_syntax_error_shows_its_source_line_and_caret() -> None:
    code, out, _ = run("validate", str(BAD_FIXTURES / "BP002-yaml-syntax.yaml"))
    assert code == 1
    assert out.splitlines()[1:4] == [
        "    7 |     count 4",
        "      |     ^",
        "   hint: this line needs `key: value` (a colon and a space after the key), or is mis-indented",
    ]


def _widths(text: str) -> list[int]:
    return [len(line) for line in text.splitlines()]


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize(
    "args",
    [
        ["cost", "blueprints/examples/gcp-a3ultra-roce-lustre.yaml", "--env", "dev", "--hours", "336"],
        ["cost", "blueprints/examples/gcp-tpu-v5p-multislice.yaml"],
        ["catalog"],
        ["plan", EXAMPLE, "--env", "prod", "--show-inputs"],
    ],
    ids=["cost-dev", "cost-tpu", "catalog", "plan"],
)
def test_text_fits_the_terminal(args: list[str], columns: int) -> None:
    code, out, _ = run(*args, columns=columns)
    assert code == 0
    # Except a finding's first line, which stays whole (docs/cli.md: editors and CI annotators parse it):
    # the plan's stack has a budget, whose note (BP411) says what it counts.
    wide = [line for line in out.splitlines() if len(line) > columns]
    assert [line for line in wide if not re.match(r"^\S+:\d+:\d+: \w+\[BP\d{3}\] ", line)] == [], wide[:3]
    assert len(wide) == (1 if args[0] == "plan" else 0)


@pytest.mark.parametrize("columns", [80, 120])
def test_diff_text_fits_the_terminal_with_short_types_and_whole_names(columns: int) -> None:
    slurm = "blueprints/examples/aws-p5-slurm.yaml"
    code, out, _ = run("diff", EXAMPLE, slurm, "--env", "prod", columns=columns)
    _, document, _ = run("diff", EXAMPLE, slurm, "--env", "prod", "--format", "json")
    assert code == 1  # it deletes stateful resources
    # A finding's first line stays whole (docs/cli.md: editors and CI annotators parse it).
    wide = [line for line in out.splitlines() if len(line) > columns]
    assert all(line.startswith(f"{slurm}:") and "] " in line for line in wide), wide[:3]
    assert len(wide) == 2  # the BP404 note (both machines' prices, one source) and the BP151 warning
    rows = [line for line in out.splitlines() if line[:5] in {"  +  ", "  -  "}]
    names = {line.split()[-1] for line in rows}
    planned = json.loads(document)["resources"]
    assert names == {urn.rsplit("::", 1)[1] for urn in [*planned["create"], *planned["delete"]]}
    assert "  +  aws:ec2:LaunchTemplate" in out
    assert "aws:ec2/launchTemplate:LaunchTemplate" not in "\n".join(rows)


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_catalog_never_cuts_a_capacity_kind(columns: int) -> None:
    _, out, _ = run("catalog", columns=columns)
    assert "capacity_block" in out
    assert "capacity_bloc…" not in out
    assert "capacity_bl" not in out.replace("capacity_block", "")


def test_narrow_cost_tables_drop_columns_but_keep_the_totals() -> None:
    _, wide, _ = run("cost", EXAMPLE, columns=120)
    _, narrow, _ = run("cost", EXAMPLE, columns=80)
    assert wide.splitlines()[2].split() == [
        "ITEM", "KIND", "SKU", "PRICING", "QUANTITY", "UNIT", "PRICE", "HOURLY", "MONTHLY"
    ]  # fmt: skip
    assert narrow.splitlines()[2].split() == ["ITEM", "SKU", "QUANTITY", "HOURLY", "MONTHLY"]
    assert narrow.splitlines()[5].split() == ["TOTAL", "$887.79", "$648,087.20"]


def test_findings_cut_long_source_lines_around_the_caret(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    labels = ", ".join(f"k{i}: v{i}" for i in range(40))
    path.write_text(
        "version: 1\nname: long\ncloud: aws\nregion: us-east-1\nzone: use1-az6\n"
        f"labels: {{{labels}, bad: 5}}\n"
        "node_groups: [{name: g, machine_type: p5.48xlarge, count: 1}]\n"
    )
    code, out, _ = run("validate", str(path), columns=80)
    assert code == 1
    lines = out.splitlines()
    source, caret = lines[1], lines[2]
    assert (len(source), source.endswith("…"), source.startswith("    6 | …")) == (80, False, True)
    assert source[caret.index("^") :].startswith("5}")
    # the first line stays whole: editors and CI annotators parse `file:line:col: …`
    assert lines[0].startswith(f"{path}:6:")


def test_plan_text_has_short_types_and_inputs_on_demand() -> None:
    _, plain, _ = run("plan", EXAMPLE, "--env", "prod")
    _, detailed, _ = run("plan", EXAMPLE, "--env", "prod", "--show-inputs")
    assert " +  │  ├─ aws:ec2:LaunchTemplate" in plain
    assert "aws:ec2/launchTemplate:LaunchTemplate" not in plain
    assert "metadataOptions" not in plain
    assert (
        '    │  │      metadataOptions: {"httpEndpoint": "enabled", "httpPutResponseHopLimit": ' in detailed
    )


def test_plan_json_includes_the_blueprints_findings() -> None:
    code, out, _ = run("plan", EXAMPLE, "--env", "dev", "--format", "json")
    assert code == 0
    document = json.loads(out)
    # The stack's budget note (what the AWS budget counts, from when) and the dev overlay's price note.
    codes = [(f["code"], f["environment"]) for f in document["findings"]]
    assert codes == [("BP411", None), ("BP404", "dev")]
    assert document["messages"] == [
        {"level": "warning", "message": f["message"]} for f in document["messages"]
    ]


def test_plan_text_shows_the_programs_log_of_a_finding_once() -> None:
    # The program logs the blueprint's warnings (for `pulumi up`); the JSON keeps that log as it is.
    _, document, _ = run("plan", EXAMPLE, "--env", "dev", "--format", "json")
    [finding] = [f for f in json.loads(document)["findings"] if f["code"] == "BP404"]
    logged = f"{finding['file']}:{finding['line']}:{finding['column']}: BP404 {finding['message']}"
    assert {"level": "warning", "message": logged} in json.loads(document)["messages"]
    code, out, _ = run("plan", EXAMPLE, "--env", "dev")
    assert (code, out.count("BP404"), "Program messages" in out) == (0, 1, False)
    assert f"{EXAMPLE}:{finding['line']}:{finding['column']}: info[BP404]" in out


def test_version_short_help_and_short_stack() -> None:
    code, out, _ = run("--version")
    assert (code, out) == (0, f"clusterfab 0.1.0 (catalog {load_catalog().version})\n")
    code, out, _ = run("plan", "-h")
    assert code == 0
    assert "-s, --stack" in out
    assert "--show-inputs" in out


@pytest.mark.parametrize(
    "args",
    [
        ["preview", "-s", "dev prod"],
        ["up", "--stack", "dev;rm"],
        ["destroy", "-s", "a/b/c/d"],
        ["inventory", "-s", ""],
        ["configure", "-s", "x" * 101],
        ["promote", "--from", "dev", "--to", "pr od"],
        ["plan", EXAMPLE, "-s", "dev:1"],
    ],
    ids=["preview", "up", "destroy", "inventory", "configure", "promote", "plan"],
)
def test_stack_names_are_checked_before_anything_runs(args: list[str]) -> None:
    code, out, err = run(*args)
    assert (code, out) == (2, "")
    assert "is not a Pulumi stack name" in err


@pytest.mark.parametrize("name", ["dev", "prod-2", "my_org/clusterfab/prod.eu", "org/dev"])
def test_pulumi_stack_names_are_accepted(name: str) -> None:
    assert stack_name(name) == name


@pytest.mark.parametrize("allow", [False, True])
def test_diff_json_ok_is_the_exit_code(allow: bool) -> None:
    # The Slurm example replaces the file system of the plain example: a stateful replacement.
    args = ["diff", EXAMPLE, "blueprints/examples/aws-p5-slurm.yaml", "--env", "prod", "--format", "json"]
    code, out, _ = run(*args, *(["--allow-replace"] if allow else []))
    document = json.loads(out)
    expected = (0, True, True) if allow else (1, False, True)
    assert (code, document["ok"], document["budget"]["ok"]) == expected


def test_a_plan_from_outside_the_project_prints_each_finding_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The program logs the blueprint's findings with the file relative to the project; the CLI names it
    # as given. The same finding must not come back as a "program message".
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("plan", str(REPO / SLURM))
    assert code == 0
    assert out.count("BP151") == 1
    assert "Program messages:" not in out


def test_a_teams_monthly_gpu_hours_are_priced_only_as_far_as_it_can_use_them(tmp_path: Path) -> None:
    # interns: 8 GPUs can use 8 x 730 = 5,840 GPU-hours in the estimate's month; 10,000 are never reached.
    blueprint = tmp_path / "slurm.yaml"
    text = (REPO / SLURM).read_text()
    assert "gpu_hours_per_month: 1000\n" in text
    blueprint.write_text(text.replace("gpu_hours_per_month: 1000\n", "gpu_hours_per_month: 10000\n"))
    code, out, _ = run("cost", str(blueprint), columns=200)
    assert code == 0
    assert (
        "  interns: 8 GPUs at once = $55.04/hour; 10,000 GPU-hours a month (it can use 5,840) = "
        "$40,179.20/month (at $6.88 per GPU-hour)"
    ) in out.splitlines()
    _, document, _ = run("cost", str(blueprint), "--format", "json")
    (interns,) = [t for t in json.loads(document)["teams"] if t["name"] == "interns"]
    assert (interns["gpu_hours_per_month"], interns["reachable_gpu_hours"], interns["monthly_usd"]) == (
        10000,
        5840,
        40179.2,
    )


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_catalog_prices_keep_the_regions_that_tell_their_rows_apart(columns: int) -> None:
    _, out, _ = run("catalog", "--cloud", "gcp", columns=columns)
    prices = out[out.index("Prices (USD)") :].splitlines()
    assert "regions" in prices[2]
    # Two on-demand prices of a3-highgpu-8g, told apart by their region.
    rows = [line for line in prices if "a3-highgpu-8g" in line and "on_demand" in line]
    assert "asia-east1" in rows[0]
    assert "asia-northeast1" in rows[1]


def test_price_notes_of_one_source_are_one_line_and_stand_ins_stay_per_item() -> None:
    # The controller's and login's E2 prices are unconfirmed from one source: one note naming both fields.
    # The reservation and flex-start prices are on-demand stand-ins, each said where its capacity is chosen.
    # Managed Lustre's price is unconfirmed from another source: its own note, at the file system's kind.
    _, out, _ = run("validate", "blueprints/examples/gcp-a3ultra-roce-lustre.yaml", "--format", "json")
    notes = [
        (f["field"], f["line"], f["environment"]) for f in json.loads(out)["findings"] if f["code"] == "BP404"
    ]
    assert notes == [
        ("node_groups[0].capacity.kind", 21, None),
        ("storage[0].kind", 26, None),
        ("scheduler.controller.machine_type", 31, None),
        ("node_groups[0].capacity.kind", 59, "dev"),
    ]
    (grouped,) = [f for f in json.loads(out)["findings"] if f["field"] == "scheduler.controller.machine_type"]
    assert grouped["message"] == (
        "the on_demand prices of e2-standard-8 (scheduler.controller.machine_type), e2-standard-4 "
        "(scheduler.login.machine_type) in us-central1 are unconfirmed (source S-GCE-E2)"
    )
