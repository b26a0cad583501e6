"""The CLI's contracts: exit codes, JSON shapes, the error boundary, and no Pulumi for offline verbs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from clusterfab import cli
from clusterfab.cli.promote import HEALTH_MAX_AGE_HOURS
from tests.conftest import BAD_FIXTURES, EXAMPLES, REPO

FINDING_KEYS = {
    "code",
    "severity",
    "message",
    "field",
    "file",
    "line",
    "column",
    "end_column",
    "environment",
    "hint",
}
MACHINE_KEYS = {
    "cloud",
    "name",
    "accelerator",
    "accelerator_count",
    "accelerator_memory_gib",
    "vcpus",
    "memory_gib",
    "fabric",
    "network_cards",
    "max_efa_interfaces",
    "gpu_nics",
    "locations",
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clusterfab", *args], capture_output=True, text=True, cwd=REPO, check=False
    )


def test_validate_example_exits_0(monkeypatch: pytest.MonkeyPatch) -> None:
    # The note is BP404: dev's spot price (2025-05-31) is stale on the fixed date.
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-22")
    proc = run("validate", "blueprints/examples/aws-p5-efa-fsx.yaml")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == (
        "blueprints/examples/aws-p5-efa-fsx.yaml: valid "
        "(0 errors, 0 warnings, 1 note; checked: base, dev, prod)"
    )


def test_validate_json_contract_and_exit_1() -> None:
    proc = run("validate", str(BAD_FIXTURES / "BP104-tpu-topology.yaml"), "--format", "json")
    assert proc.returncode == 1
    payload = json.loads(proc.stdout)
    assert list(payload) == [
        "schema_version",
        "blueprint",
        "env",
        "cloud",
        "region",
        "ok",
        "checked",
        "summary",
        "findings",
    ]
    assert (payload["schema_version"], payload["ok"], payload["cloud"], payload["region"]) == (
        1,
        False,
        "gcp",
        "us-central1",
    )
    (finding,) = payload["findings"]
    assert set(finding) == FINDING_KEYS
    assert (
        finding["code"],
        finding["field"],
        finding["line"],
        finding["column"],
        finding["end_column"],
        finding["environment"],
    ) == ("BP104", "tpu_slices[0].topology", 11, 15, 20, None)


def test_validate_with_env_checks_only_that_environment() -> None:
    proc = run("validate", "blueprints/examples/gcp-a3mega-tcpxo-filestore.yaml", "--env", "dev")
    assert proc.returncode == 0
    assert proc.stdout.strip().endswith("checked: dev)")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("validate", "no/such.yaml"), "error: no such file: no/such.yaml"),
        (
            ("validate", "blueprints/examples"),
            "error: blueprints/examples is a directory, not a blueprint file",
        ),
        (
            ("validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--env", "staging"),
            "error: environment 'staging' is not defined in blueprints/examples/aws-p5-efa-fsx.yaml "
            "(defined: dev, prod)",
        ),
        (
            ("validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--env", "prd"),
            "error: environment 'prd' is not defined in blueprints/examples/aws-p5-efa-fsx.yaml "
            "(defined: dev, prod); did you mean 'prod'?",
        ),
        (
            ("validate", "tests/fixtures/blueprints/bad/BP104-tpu-topology.yaml", "--env", "dev"),
            "error: environment 'dev' is not defined in "
            "tests/fixtures/blueprints/bad/BP104-tpu-topology.yaml: it has no `environments:`; "
            "leave out --env to use the blueprint as it is",
        ),
    ],
)
def test_usage_errors_exit_2_with_one_line(args: tuple[str, ...], message: str) -> None:
    proc = run(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == message
    assert "Traceback" not in proc.stderr


def test_bad_flag_value_exits_2() -> None:
    proc = run("validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--format", "xml")
    assert proc.returncode == 2
    assert "Invalid value for '--format'" in proc.stderr


def test_internal_error_exits_3_without_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*_: object, **__: object) -> None:
        raise RuntimeError("kaboom")

    monkeypatch.setattr("clusterfab.load.load", boom)
    monkeypatch.setattr(sys, "argv", ["clusterfab", "validate", str(EXAMPLES[0])])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: RuntimeError: kaboom\n")
    assert "Traceback" not in err


def test_catalog_json_contract() -> None:
    proc = run("catalog", "--format", "json")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert {"version", "as_of", "machine_types", "tpu_generations", "storage_tiers", "prices"} <= set(data)
    for machine in data["machine_types"]:
        assert set(machine) >= MACHINE_KEYS
        if machine["cloud"] == "aws":
            assert machine["gpu_nics"] is None
            assert machine["network_cards"] > 0
            assert all("-az" in z for z in machine["locations"])
        else:
            assert machine["network_cards"] is None
            assert machine["max_efa_interfaces"] is None
    p5 = next(m for m in data["machine_types"] if m["name"] == "p5.48xlarge")
    assert (p5["accelerator"], p5["accelerator_count"], p5["accelerator_memory_gib"]) == ("H100", 8, 80)
    assert (p5["network_cards"], p5["max_efa_interfaces"], len(p5["locations"])) == (32, 32, 33)


def test_catalog_for_one_cloud() -> None:
    data = json.loads(run("catalog", "--cloud", "gcp", "--format", "json").stdout)
    assert {m["cloud"] for m in data["machine_types"]} == {"gcp"}
    assert {p["cloud"] for p in data["prices"]} == {"gcp"}
    assert [g["name"] for g in data["tpu_generations"]] == ["v5p", "v6e", "v5e"]


def test_schema_command_prints_the_committed_schema() -> None:
    proc = run("schema")
    assert proc.returncode == 0
    assert proc.stdout == (REPO / "blueprints" / "schema" / "blueprint.v1.json").read_text()


_PROBE = """
import sys
from clusterfab.cli import main
sys.argv = ["clusterfab", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    code = exc.code
heavy = ("pulumi", "pulumi.", "pulumi_", "botocore", "googleapiclient", "google.cloud.lustre", "tests")
loaded = sorted(m for m in sys.modules if m.startswith(heavy))
print("RESULT", code, loaded)
"""


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "blueprints/examples/gcp-a3ultra-roce-lustre.yaml"],
        ["validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--format", "json"],
        ["validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--stack", "prod"],
        ["catalog", "--format", "json"],
        ["catalog"],
        ["schema"],
        ["cost", "blueprints/examples/aws-p5-efa-fsx.yaml"],
        ["cost", "blueprints/examples/gcp-tpu-v5p-multislice.yaml", "--format", "json", "--hours", "24"],
        ["cost", "blueprints/examples/gcp-a3ultra-roce-lustre.yaml", "--env", "dev", "--format", "markdown"],
    ],
)
def test_offline_commands_import_no_pulumi_and_no_api_models(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=REPO, check=False
    )
    result = proc.stdout.strip().splitlines()[-1]
    assert result == "RESULT 0 []", proc.stdout[-500:] + proc.stderr


def test_examples_exist() -> None:
    assert {Path(p).name for p in EXAMPLES} >= {
        "aws-p5-efa-fsx.yaml",
        "aws-p6-b200-capacity-block.yaml",
        "gcp-a3mega-tcpxo-filestore.yaml",
        "gcp-a3ultra-roce-lustre.yaml",
        "gcp-tpu-v5p-multislice.yaml",
        "gcp-tpu-v6e-spot.yaml",
    }


def test_promote_default_health_age_is_the_health_module_default() -> None:
    import datetime as dt

    from clusterfab.health import DEFAULT_MAX_AGE

    assert dt.timedelta(hours=HEALTH_MAX_AGE_HOURS) == DEFAULT_MAX_AGE == dt.timedelta(hours=72)


def _command_names() -> list[str]:
    return [name for info in cli.app.registered_commands if (name := cli._command_name(info))]


@pytest.mark.parametrize(
    "args",
    [
        *([name, "--help"] for name in _command_names()),
        ["validate"],
        ["validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--bogus"],
        ["validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--format", "xml"],
        ["cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours"],
    ],
)
def test_a_command_parses_the_same_in_the_app_narrowed_to_it(args: list[str]) -> None:
    from typer.testing import CliRunner

    narrowed = cli._app_for(args)
    assert narrowed is not cli.app
    assert [cli._command_name(info) for info in narrowed.registered_commands] == [args[0]]
    runner = CliRunner()
    whole, alone = runner.invoke(cli.app, args), runner.invoke(narrowed, args)
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)
    assert whole.exit_code in {0, 2}


@pytest.mark.parametrize(
    "args", [[], ["--version"], ["-h", "validate"], ["render", "--help"], ["valdate", "x.yaml"]]
)
def test_other_command_lines_get_the_whole_app(args: list[str]) -> None:
    assert cli._app_for(args) is cli.app
