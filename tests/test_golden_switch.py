"""The golden switch (tests/conftest.py): only UPDATE_GOLDEN=1 rewrites, never under CI, and a test that
rewrote its golden file fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import conftest
from tests.conftest import REPO, assert_golden, check_golden_switch


@pytest.fixture
def golden_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """assert_golden's directory, in a scratch place: these tests write golden files."""
    monkeypatch.setattr(conftest, "GOLDEN", tmp_path)
    monkeypatch.delenv("CI", raising=False)
    return tmp_path


def test_a_run_that_rewrites_a_golden_file_fails_naming_it(
    monkeypatch: pytest.MonkeyPatch, golden_dir: Path
) -> None:
    (golden_dir / "cost").mkdir()
    (golden_dir / "cost" / "x.md").write_text("old\n")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        assert_golden("cost/x.md", "new\n")
    assert failed.value.msg == (
        f"rewrote {golden_dir}/cost/x.md; review the diff, then rerun without UPDATE_GOLDEN to check"
    )
    assert (golden_dir / "cost" / "x.md").read_text() == "new\n"


def test_a_missing_golden_file_is_written_and_the_test_fails(
    monkeypatch: pytest.MonkeyPatch, golden_dir: Path
) -> None:
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(pytest.fail.Exception) as failed:
        assert_golden("plans/new.txt", "plan\n")
    assert failed.value.msg == (
        f"rewrote {golden_dir}/plans/new.txt; review the diff, then rerun without UPDATE_GOLDEN to check"
    )
    assert (golden_dir / "plans" / "new.txt").read_text() == "plan\n"


def test_a_golden_file_that_already_matches_passes_and_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, golden_dir: Path
) -> None:
    path = golden_dir / "same.txt"
    path.write_text("same\n")
    os.utime(path, (0, 0))
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    assert_golden("same.txt", "same\n")
    assert path.stat().st_mtime == 0


def test_without_the_switch_a_difference_fails_and_nothing_is_written(
    monkeypatch: pytest.MonkeyPatch, golden_dir: Path
) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    (golden_dir / "x.txt").write_text("old\n")
    with pytest.raises(AssertionError) as failed:
        assert_golden("x.txt", "new\n")
    assert str(failed.value).startswith(
        f"{golden_dir}/x.txt differs; if the change is intended, rerun with UPDATE_GOLDEN=1\n"
    )
    assert (golden_dir / "x.txt").read_text() == "old\n"


@pytest.mark.parametrize("value", ["0", "true", "yes", " 1", "2"])
def test_any_value_but_1_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("UPDATE_GOLDEN", value)
    with pytest.raises(pytest.UsageError) as raised:
        check_golden_switch()
    assert str(raised.value) == (
        f"UPDATE_GOLDEN={value!r}: set UPDATE_GOLDEN=1 to rewrite the golden files, or unset it to check them"
    )


def test_the_switch_is_refused_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    with pytest.raises(pytest.UsageError) as raised:
        check_golden_switch()
    assert str(raised.value) == (
        "UPDATE_GOLDEN=1 under CI=true: CI checks the golden files and never rewrites them; "
        "unset UPDATE_GOLDEN"
    )


@pytest.mark.parametrize(("ci", "update"), [(None, None), (None, ""), (None, "1"), ("true", None)])
def test_these_settings_are_accepted(
    monkeypatch: pytest.MonkeyPatch, ci: str | None, update: str | None
) -> None:
    for name, value in (("CI", ci), ("UPDATE_GOLDEN", update)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert check_golden_switch() is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"UPDATE_GOLDEN": "0"}, "ERROR: UPDATE_GOLDEN='0': set UPDATE_GOLDEN=1 to rewrite the golden files"),
        ({"UPDATE_GOLDEN": "1", "CI": "true"}, "ERROR: UPDATE_GOLDEN=1 under CI=true: CI checks the golden"),
    ],
)
def test_a_session_with_a_bad_switch_stops_before_any_test(env: dict[str, str], message: str) -> None:
    """The real session: pytest's usage error (exit 4), no test run, not a single golden file touched."""
    clean = {k: v for k, v in os.environ.items() if k not in {"CI", "UPDATE_GOLDEN"}}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
         "tests/test_golden_switch.py"],
        cwd=REPO, env={**clean, **env}, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert proc.stdout == ""
