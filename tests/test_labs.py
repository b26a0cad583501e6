"""The lab rule (tests/labs.py): outside CI a missing prerequisite skips, under CI=true it fails unless
it is a documented property of CI machines; no test skips any other way; .ci/run installs what the labs
name."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

import pytest

from tests import labs
from tests.ansible import chroot_testbed
from tests.conftest import REPO
from tests.labs import GITHUB, MD_DRIVER, require, unavailable
from tests.slurm import rootfs

CI_RUN = (REPO / ".ci" / "run").read_text()
TESTING_DOC = (REPO / "docs" / "testing.md").read_text()


def _outcome(check: Callable[[], None]) -> tuple[str, str]:
    """What the rule did: ("skip" | "fail", its message), or ("ran", ""). Caught here, so that a rule that
    skips where it should fail makes these tests fail instead of skipping them."""
    try:
        check()
    except pytest.skip.Exception as skipped:
        return "skip", skipped.msg or ""
    except pytest.fail.Exception as failed:
        return "fail", failed.msg or ""
    return "ran", ""


def _ci(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", value)


WIDGET = "no widget here; install it with: apt-get install -y widget"


@pytest.mark.parametrize("value", [None, "", "false", "0", "no"])
def test_outside_ci_a_missing_prerequisite_skips_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    _ci(monkeypatch, value)
    assert _outcome(lambda: require(False, WIDGET)) == ("skip", WIDGET)
    assert _outcome(lambda: unavailable(WIDGET)) == ("skip", WIDGET)


@pytest.mark.parametrize("value", ["true", "True", "TRUE", "1", "yes"])
def test_under_ci_a_missing_prerequisite_fails(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    _ci(monkeypatch, value)
    failed = (
        "fail",
        "no widget here; install it with: apt-get install -y widget: under CI=true a missing prerequisite "
        "fails the test (.ci/run provides it; docs/testing.md lists what CI may lack)",
    )
    assert _outcome(lambda: require(False, WIDGET)) == failed
    assert _outcome(lambda: unavailable(WIDGET)) == failed


@pytest.mark.parametrize("ci", [None, "true"])
def test_a_documented_gap_of_ci_machines_skips_and_names_what_would_run_it(
    monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    _ci(monkeypatch, ci)
    reason = "the kernel has no md driver: RAID 0 cannot be assembled here"
    assert _outcome(lambda: require(False, reason, ci_exempt=MD_DRIVER)) == (
        "skip",
        "the kernel has no md driver: RAID 0 cannot be assembled here (CI machines lack the md (software "
        "RAID) driver in the kernel (no /proc/mdstat), and no kernel modules to load it, see "
        "docs/testing.md); to run it: a kernel with the md driver and raid0 (modprobe raid0), as root",
    )


@pytest.mark.parametrize("ci", [None, "true"])
def test_a_met_prerequisite_runs(monkeypatch: pytest.MonkeyPatch, ci: str | None) -> None:
    _ci(monkeypatch, ci)
    assert _outcome(lambda: require(True, "never shown")) == ("ran", "")
    assert _outcome(lambda: require(True, "never shown", ci_exempt=GITHUB)) == ("ran", "")


def test_every_gap_of_ci_machines_is_documented() -> None:
    """docs/testing.md names each gap the rule accepts: what CI lacks and what would make the test run."""
    gaps = {name: value for name, value in vars(labs).items() if isinstance(value, labs.CiGap)}
    assert set(gaps) == {"MD_DRIVER", "CAP_SYS_RESOURCE", "GITHUB", "PULUMI_CLI", "LIVE_CLOUD"}
    section = TESTING_DOC.split("## What CI machines lack\n", 1)[1].split("\n## ", 1)[0]
    rows = {match[0]: match[1:] for match in re.findall(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", section, re.M)}
    assert rows == {name: (gap.lacks, gap.to_run) for name, gap in gaps.items()}


def _skips(path: str, tree: ast.AST) -> list[str]:
    """Where a module skips through pytest itself: pytest.skip(...), pytest.importorskip(...),
    @pytest.mark.skip / skipif, or their names imported from pytest."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "pytest":
            names = {alias.name for alias in node.names} & {"skip", "importorskip"}
            found += [(node.lineno, f"from pytest import {name}") for name in sorted(names)]
        if not isinstance(node, ast.Attribute) or node.attr not in {"skip", "skipif", "importorskip"}:
            continue
        owner = ast.unparse(node.value)
        if owner in {"pytest", "pytest.mark"}:
            found.append((node.lineno, f"{owner}.{node.attr}"))
    return [f"{path}:{line}: {name}" for line, name in sorted(found)]


def test_no_test_skips_except_through_the_rule() -> None:
    """A skip written anywhere else would be one CI cannot notice; a declared dependency is imported."""
    found = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith("tests/fixtures/") or relative in {"tests/labs.py", "tests/test_labs.py"}:
            continue
        found += _skips(relative, ast.parse(path.read_text(), relative))
    assert found == []


def test_the_scan_finds_each_kind_of_skip() -> None:
    source = (
        "import pytest\n"
        "pytest.importorskip('grafana_foundation_sdk')\n"
        "@pytest.mark.skipif(True, reason='r')\n"
        "def test_a():\n"
        "    pytest.skip('no tool')\n"
        "@pytest.mark.skip\n"
        "def test_b(): ...\n"
        "from pytest import importorskip, raises, skip\n"
    )
    assert _skips("t.py", ast.parse(source)) == [
        "t.py:2: pytest.importorskip",
        "t.py:3: pytest.mark.skipif",
        "t.py:5: pytest.skip",
        "t.py:6: pytest.mark.skip",
        "t.py:8: from pytest import importorskip",
        "t.py:8: from pytest import skip",
    ]


def test_ci_installs_every_package_the_labs_ask_for() -> None:
    named = {package for _, package in (*chroot_testbed._PREREQUISITES, *rootfs._PREREQUISITES)}
    assert named == {"debootstrap", "gnupg", "dpkg", "coreutils", "util-linux"}
    [installed] = re.findall(r"^LAB_PACKAGES=\((.*)\)$", CI_RUN, re.M)
    # The tests also run losetup (mount), mkfs.ext4 and resize2fs (e2fsprogs), git and ip (iproute2) on
    # the host, and read Azure's database roots from ca-certificates' trust store.
    assert installed.split() == [
        "debootstrap", "gnupg", "dpkg", "coreutils", "util-linux", "mount", "e2fsprogs", "git", "iproute2",
        "ca-certificates",
    ]  # fmt: skip
    assert named <= set(installed.split())


def test_ci_runs_the_suite_as_ci() -> None:
    """CI sets CI=true; .ci/run sets it too, so that a run by hand fails where CI would."""
    assert "\nexport CI=true\n" in CI_RUN
