"""Every JSON document the CLI prints, checked against the JSON Schema documented for it in docs/json/.

The schemas are closed at the top level and for findings, so a field added without documenting it
fails here; real outputs of real commands are checked, valid blueprints and invalid ones, and the
error object of a command that cannot run.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterfab import cli
from tests.conftest import BAD_FIXTURES, EXAMPLES, REPO
from tests.json_contract import SCHEMAS
from tests.json_contract import check_document as _check


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CLUSTERFAB_TODAY", "2026-11-22")


def _json(*args: str, code: int | None = 0) -> Any:
    """Run the CLI in this process (its error boundary included) and parse what it printed."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        patch.setattr(sys, "argv", ["clusterfab", *args, "--format", "json"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
    assert stderr.getvalue() == "", stderr.getvalue()[-2000:]
    if code is not None:
        assert exited.value.code == code, stdout.getvalue()[-2000:]
    return json.loads(stdout.getvalue())


def test_every_output_has_a_documented_schema_and_page() -> None:
    for name in ("validate", "cost", "plan", "diff", "catalog", "health", "error"):
        assert (SCHEMAS / f"{name}.schema.json").is_file()
        page = REPO / "docs" / "json" / f"{name}.md"
        assert f"schemas/{name}.schema.json" in page.read_text(), page


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_validate_and_cost_of_every_example(path: Path) -> None:
    relative = str(path.relative_to(REPO))
    document = _json("validate", relative)
    _check(document, "validate")
    assert (document["blueprint"], document["checked"]) == (relative, [None, "dev", "prod"])
    for args in ([], ["--env", "dev", "--hours", "336", "--utilisation", "25"]):
        cost = _json("cost", relative, *args, code=None)
        _check(cost, "cost")
        assert cost["env"] == (args[1] if args else None)


@pytest.mark.parametrize(
    "fixture", ["BP001-empty", "BP002-yaml-syntax", "BP104-tpu-topology", "BP005-unknown-field"]
)
def test_invalid_blueprints_print_the_validate_document_from_every_command(fixture: str) -> None:
    path = str(BAD_FIXTURES / f"{fixture}.yaml")
    for command in ("validate", "cost"):
        document = _json(command, path, code=1)
        _check(document, "validate")
        assert document["ok"] is False


def test_cost_and_diff_documents_of_an_autoscaled_group(tmp_path: Path) -> None:
    example = REPO / "blueprints" / "examples" / "aws-p5-efa-fsx.yaml"
    base, new = tmp_path / "base.yaml", tmp_path / "new.yaml"
    base.write_text(example.read_text().replace("    count: 16", "    autoscaling: {min: 2, max: 16}", 1))
    new.write_text(example.read_text().replace("    count: 16", "    autoscaling: {min: 4, max: 16}", 1))
    cost = _json("cost", str(new), "--env", "prod", "--utilisation", "12.5")
    _check(cost, "cost")
    assert (cost["items"][0]["min_quantity"], cost["utilisation_percent"]) == (4, 12.5)
    diff = _json("diff", str(base), str(new), "--env", "prod")
    _check(diff, "diff")
    # 2 more p5.48xlarge at $55.04/h always up; the max, hence the full-size total, is the same
    assert diff["cost"]["delta"] == {
        "hourly_usd": 0.0,
        "monthly_usd": 0.0,
        "min_hourly_usd": 110.08,
        "min_monthly_usd": 80358.4,
    }


def test_plan_document() -> None:
    document = _json("plan", "blueprints/examples/aws-p6-b200-capacity-block.yaml", "--env", "dev")
    _check(document, "plan")
    assert (document["cloud"], document["region"], document["stack"]) == ("aws", "us-east-1", "dev")


def test_diff_document(tmp_path: Path) -> None:
    new = tmp_path / "new.yaml"
    example = REPO / "blueprints" / "examples" / "gcp-a3ultra-roce-lustre.yaml"
    new.write_text(example.read_text().replace("count: 2", "count: 3", 1))
    document = _json("diff", str(example), str(new), "--env", "dev", code=None)
    _check(document, "diff")
    assert (document["base"], document["blueprint"], document["cloud"]) == (str(example), str(new), "gcp")
    # Managed Lustre at 500 MB/s per TiB (an unconfirmed price), the Slurm controller and login machines (one
    # note: the same unconfirmed source) and the flex-start group are priced with notes.
    assert [(f["code"], f["field"]) for f in document["findings"]] == [
        ("BP404", "storage[0].kind"),
        ("BP404", "scheduler.controller.machine_type"),
        ("BP404", "node_groups[0].capacity.kind"),
    ]


@pytest.mark.parametrize("cloud", [[], ["--cloud", "aws"], ["--cloud", "gcp"]], ids=["all", "aws", "gcp"])
def test_catalog_document(cloud: list[str]) -> None:
    document = _json("catalog", *cloud)
    _check(document, "catalog")
    assert document["cloud"] == (cloud[1] if cloud else None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "no/such.yaml"], "no such file: no/such.yaml"),
        (
            ["cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--env", "prdo"],
            "environment 'prdo' is not defined in blueprints/examples/aws-p5-efa-fsx.yaml "
            "(defined: dev, prod); did you mean 'prod'?",
        ),
        (["cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--hours", "-1"], "--hours must be a positive"),
        (
            ["cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "120"],
            "--utilisation must be a percentage from 0 to 100, not 120",
        ),
        (["cost", "blueprints/examples/aws-p5-efa-fsx.yaml", "--utilisation", "abc"], "Invalid value"),
        (["plan", "blueprints/examples/aws-p5-efa-fsx.yaml", "-s", "a b"], "Invalid value for '--stack'"),
        (["validate", "blueprints/examples/aws-p5-efa-fsx.yaml", "--no-such-flag"], "No such option"),
    ],
)
def test_usage_errors_in_json_mode_are_a_json_error_object(args: list[str], message: str) -> None:
    document = _json(*args, code=2)
    _check(document, "error")
    assert document["error"]["kind"] == "usage"
    assert document["error"]["message"].startswith(message) or message in document["error"]["message"]
