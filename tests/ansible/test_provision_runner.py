"""clusterfab.provision.runner against small playbooks on the local connection (no root needed)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from clusterfab.provision.runner import (
    FailedTask,
    HostStats,
    PlaybookEvent,
    RunnerError,
    RunProgress,
    run_playbook,
    summary_table,
)

PLAYBOOK = """\
- name: Exercise the runner
  hosts: all
  gather_facts: false
  tasks:
    - name: Write the marker
      ansible.builtin.copy:
        content: "{{ marker_text }}"
        dest: "{{ marker_dir }}/{{ inventory_hostname }}.txt"
        mode: "0644"
      tags: [write]
    - name: Never runs
      ansible.builtin.debug:
        msg: unreachable branch
      when: false
    - name: Refuse n2
      ansible.builtin.assert:
        that: inventory_hostname != 'n2'
        fail_msg: "{{ inventory_hostname }} is not allowed"
    - name: Loop over items
      ansible.builtin.assert:
        that: item != 'bad'
        fail_msg: "item {{ item }} is bad"
      loop: "{{ loop_items }}"
"""


def inventory(*hosts: str) -> dict[str, Any]:
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    return {"all": {"hosts": {host: dict(local) for host in hosts}}}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "site.yml").write_text(PLAYBOOK)
    return project


def test_success_reports_stats_per_host(project: Path, tmp_path: Path) -> None:
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n1"),
        extravars={"marker_text": "hello", "marker_dir": str(tmp_path), "loop_items": ["a"]},
    )
    assert result.succeeded
    assert (result.rc, result.status) == (0, "successful")
    assert result.hosts == {"n1": HostStats(ok=3, changed=1, skipped=1)}
    assert result.changed == 1
    assert result.failed_tasks == ()
    assert result.artifact_dir is None
    assert (tmp_path / "n1.txt").read_text() == "hello"
    assert result.duration_s > 0


def test_extra_variables_are_data_that_is_never_templated(project: Path, tmp_path: Path) -> None:
    """The attack: a string of the blueprint that holds a template reaches the extra variables. ansible-core
    renders templates in variables, so the lookup would run on the machine that pushes; marked unsafe it is
    written as it is, and its command never runs."""
    attack = f"{{{{ lookup('pipe', 'touch {tmp_path}/owned') }}}}"
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n1"),
        extravars={"marker_text": attack, "marker_dir": str(tmp_path), "loop_items": [attack]},
    )
    assert result.succeeded, result.failed_tasks
    assert (tmp_path / "n1.txt").read_text() == attack
    assert not (tmp_path / "owned").exists()


def test_failures_carry_host_task_and_message(project: Path, tmp_path: Path) -> None:
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n1", "n2"),
        extravars={"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": ["a", "bad"]},
    )
    assert not result.succeeded
    assert (result.rc, result.status) == (2, "failed")
    assert result.failed_tasks == (
        FailedTask(host="n2", task="Refuse n2", message="n2 is not allowed"),
        FailedTask(
            host="n1",
            task="Loop over items",
            message="One or more items failed\nitem bad is bad",
        ),
    )
    assert result.hosts["n1"].failed == 1
    assert result.hosts["n2"] == HostStats(ok=1, changed=1, failed=1, skipped=1)


def test_limit_and_tags_narrow_the_run(project: Path, tmp_path: Path) -> None:
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n1", "n2"),
        extravars={"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": []},
        limit="n2",
        tags=["write"],
    )
    # Only the tagged task ran, so "Refuse n2" never had a chance to fail.
    assert result.succeeded
    assert result.hosts == {"n2": HostStats(ok=1, changed=1)}
    assert sorted(path.name for path in tmp_path.glob("*.txt")) == ["n2.txt"]


def test_events_stream_to_the_callback_and_into_the_artifacts(project: Path, tmp_path: Path) -> None:
    events: list[PlaybookEvent] = []
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n1"),
        extravars={"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": []},
        private_data_dir=tmp_path / "runner",
        on_event=events.append,
    )
    assert events[0].kind == "playbook_on_start"
    assert events[-1].kind == "playbook_on_stats"
    starts = [(event.host, event.task) for event in events if event.kind == "runner_on_start"]
    assert starts == [
        ("n1", "Write the marker"),
        ("n1", "Never runs"),
        ("n1", "Refuse n2"),
        ("n1", "Loop over items"),
    ]
    changed = [event.task for event in events if event.kind == "runner_on_ok" and event.changed]
    assert changed == ["Write the marker"]
    # Events only reach artifacts/<ident>/job_events when the handler returns True.
    assert result.artifact_dir is not None
    assert result.artifact_dir.parent == tmp_path / "runner" / "artifacts"
    written = list((result.artifact_dir / "job_events").glob("*.json"))
    assert len(written) == len(events)
    # Extra vars travel in a private file, not on the ansible-playbook command line.
    command = (result.artifact_dir / "command").read_text()
    assert "marker_text" not in command
    extravars_file = tmp_path / "runner" / "env" / "extravars"
    assert extravars_file.stat().st_mode & 0o777 == 0o600
    assert json.loads(extravars_file.read_text())["marker_text"] == {"__ansible_unsafe": "x"}


def test_temporary_private_data_dir_is_removed_unless_kept(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    extravars = {"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": []}
    run_playbook(project / "site.yml", inventory=inventory("n1"), extravars=extravars)
    assert list(scratch.iterdir()) == []
    kept = run_playbook(
        project / "site.yml", inventory=inventory("n1"), extravars=extravars, keep_artifacts=True
    )
    assert kept.artifact_dir is not None
    assert kept.artifact_dir.is_relative_to(scratch)
    assert (kept.artifact_dir / "stdout").is_file()


def test_a_playbook_that_does_not_parse_reports_ansibles_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("- name: Broken\n  hosts: all\n  tasks:\n    - ansible.builtin.debug: [\n")
    result = run_playbook(broken, inventory=inventory("n1"))
    assert result.rc == 4
    assert result.hosts == {}
    [failure] = result.failed_tasks
    assert (failure.host, failure.task) == ("", "")
    assert "YAML" in failure.message


def test_inventory_file_path_is_accepted(project: Path, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts.ini"
    hosts.write_text(f"n1 ansible_connection=local ansible_python_interpreter={sys.executable}\n")
    result = run_playbook(
        project / "site.yml",
        inventory=hosts,
        extravars={"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": []},
    )
    assert result.hosts == {"n1": HostStats(ok=2, changed=1, skipped=2)}


def test_bad_arguments_are_refused_before_running(project: Path, tmp_path: Path) -> None:
    with pytest.raises(RunnerError, match="does not exist"):
        run_playbook(project / "missing.yml", inventory=inventory("n1"))
    with pytest.raises(RunnerError, match=r"inventory .* does not exist"):
        run_playbook(project / "site.yml", inventory=tmp_path / "nope.ini")
    with pytest.raises(RunnerError, match="is inside the project"):
        run_playbook(project / "site.yml", inventory=inventory("n1"), private_data_dir=project / "runner")
    assert not (project / "runner").exists()


def test_importing_the_runner_pulls_in_neither_pulumi_nor_ansible_runner() -> None:
    code = (
        "import sys, clusterfab.provision.runner\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'ansible_runner')))"
    )
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output == "[]\n"


def _event(kind: str, host: str, task: str, *, changed: bool = False) -> PlaybookEvent:
    return PlaybookEvent(kind, host, task, None, changed, None, {})


def test_progress_table_tracks_each_hosts_current_task() -> None:
    progress = RunProgress(Console(file=io.StringIO()), title="gpu_node.yml")
    for event in (
        _event("runner_on_start", "node-a", "Install NCCL"),
        _event("runner_on_ok", "node-a", "Install NCCL", changed=True),
        _event("runner_on_start", "node-a", "Hold NCCL"),
        _event("runner_on_start", "node-b", "Install NCCL"),
        _event("runner_on_failed", "node-b", "Install NCCL"),
        _event("runner_on_skipped", "node-b", "Skip me"),
    ):
        progress.handle(event)
    console = Console(record=True, width=80, file=io.StringIO())
    console.print(progress.render())
    lines = console.export_text().splitlines()
    assert "│ node-a │ Hold NCCL    │  1 │       1 │      0 │       0 │" in lines
    assert "│ node-b │ Install NCCL │  0 │       0 │      1 │       1 │" in lines


def test_summary_lists_failures_under_the_recap(project: Path, tmp_path: Path) -> None:
    result = run_playbook(
        project / "site.yml",
        inventory=inventory("n2"),
        extravars={"marker_text": "x", "marker_dir": str(tmp_path), "loop_items": []},
    )
    console = Console(record=True, width=100, file=io.StringIO())
    console.print(summary_table(result))
    text = console.export_text()
    assert "│ n2   │  1 │       1 │      1 │           0 │       1 │" in text
    assert "│ n2   │ Refuse n2 │ n2 is not allowed │" in text
