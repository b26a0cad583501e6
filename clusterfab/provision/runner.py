"""Run the clusterfab playbooks through ansible-runner and reduce the run to a small result.

Invariants: importing this module has no side effects and imports neither pulumi nor
ansible_runner (that import happens inside :func:`run_playbook`). Runner artifacts never land in
the project: they go to a private data dir, a temporary one removed after the run unless the
caller passes its own or asks to keep it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from clusterfab.bootstrap.inert import inert

__all__ = [
    "FailedTask",
    "HostStats",
    "PlaybookEvent",
    "PlaybookResult",
    "RunProgress",
    "RunnerError",
    "run_playbook",
    "summary_table",
]

_MESSAGE_LIMIT = 2000
_STATS_KEYS = {
    "ok": "ok",
    "changed": "changed",
    "failures": "failed",
    "dark": "unreachable",
    "skipped": "skipped",
    "rescued": "rescued",
    "ignored": "ignored",
}


class RunnerError(RuntimeError):
    """The playbook could not be started (bad arguments or no ansible-playbook executable)."""


@dataclass(frozen=True, slots=True)
class PlaybookEvent:
    """One ansible-runner event, reduced to what progress displays need.

    Attributes:
        kind: The runner event name, for example ``runner_on_ok`` or ``playbook_on_task_start``.
        host: Inventory host the event is about, if any.
        task: Task name, if any.
        role: Role the task belongs to, if any.
        changed: Whether the task result reported a change.
        message: Failure or unreachable message, for failed events.
        raw: The untouched runner event.
    """

    kind: str
    host: str | None
    task: str | None
    role: str | None
    changed: bool
    message: str | None
    raw: Mapping[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class HostStats:
    """Per-host counters from the play recap."""

    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    rescued: int = 0
    ignored: int = 0


@dataclass(frozen=True, slots=True)
class FailedTask:
    """A task that failed (or a host that was unreachable), with Ansible's message."""

    host: str
    task: str
    message: str
    role: str | None = None


@dataclass(frozen=True, slots=True)
class PlaybookResult:
    """Outcome of one playbook run.

    Attributes:
        playbook: The playbook that ran.
        rc: Exit code of ansible-playbook.
        status: ansible-runner status: ``successful``, ``failed``, ``timeout`` or ``canceled``.
        hosts: Recap counters per host (empty when Ansible stopped before any play ran).
        failed_tasks: Failed tasks and unreachable hosts, in the order they happened. A run that
            failed before any task ran (syntax error, missing variable file) has one entry with an
            empty host and Ansible's error output as the message.
        duration_s: Wall-clock duration of the run.
        artifact_dir: Runner artifacts, when they were kept.
    """

    playbook: Path
    rc: int
    status: str
    hosts: Mapping[str, HostStats]
    failed_tasks: tuple[FailedTask, ...]
    duration_s: float
    artifact_dir: Path | None = None

    @property
    def succeeded(self) -> bool:
        """True when ansible-playbook exited 0 and the runner reported success."""
        return self.rc == 0 and self.status == "successful"

    @property
    def changed(self) -> int:
        """Changed tasks over all hosts."""
        return sum(stats.changed for stats in self.hosts.values())


def run_playbook(
    playbook: str | Path,
    *,
    inventory: str | Path | Mapping[str, Any],
    extravars: Mapping[str, Any] | None = None,
    limit: str | None = None,
    tags: Sequence[str] | None = None,
    envvars: Mapping[str, str] | None = None,
    private_data_dir: str | Path | None = None,
    keep_artifacts: bool = False,
    on_event: Callable[[PlaybookEvent], None] | None = None,
    timeout_s: int | None = None,
    verbosity: int = 0,
) -> PlaybookResult:
    """Run ``playbook`` with ansible-runner and return its result.

    The playbook's directory is the runner's project dir, so ``ansible.cfg`` and ``roles/`` next
    to it apply.

    Args:
        playbook: Path of the playbook file.
        inventory: Path of an inventory file, or an inventory as a dict (YAML/JSON structure).
        extravars: Variables passed with ``--extra-vars`` (through a 0600 file in the private
            data dir, never on the command line); they must be JSON-serialisable.
        limit: Host pattern for ``--limit``.
        tags: Only run tasks with these tags.
        envvars: Extra environment variables for ansible-playbook.
        private_data_dir: Runner's private data dir; a temporary directory when omitted. It must
            not lie inside the playbook's directory.
        keep_artifacts: Keep a temporary private data dir and report it as ``artifact_dir``.
        on_event: Called with every runner event, in order.
        timeout_s: Cancel the run after this many seconds.
        verbosity: ansible-playbook ``-v`` count.

    Returns:
        The reduced result; a failed playbook is a result with ``succeeded`` false, not an error.

    Raises:
        RunnerError: The playbook or inventory file does not exist, the private data dir is
            inside the project, or no ``ansible-playbook`` executable can be found.
    """
    playbook_path = Path(playbook).resolve()
    if not playbook_path.is_file():
        raise RunnerError(f"playbook {playbook_path} does not exist")
    project_dir = playbook_path.parent

    runner_inventory = _runner_inventory(inventory)
    binary = _find_ansible_playbook()
    temporary = private_data_dir is None
    data_dir = _private_data_dir(private_data_dir, project_dir)
    _write_extravars(data_dir, extravars or {})

    collector = _EventCollector(on_event)
    runner_env = {"PATH": _search_path(binary), "ANSIBLE_NOCOLOR": "1"}
    runner_env.update(envvars or {})

    # Imported here so that importing this module (the CLI does) stays cheap.
    import ansible_runner  # type: ignore[import-untyped]  # noqa: PLC0415

    started = time.monotonic()
    try:
        runner = ansible_runner.run(
            private_data_dir=str(data_dir),
            project_dir=str(project_dir),
            playbook=playbook_path.name,
            inventory=runner_inventory,
            limit=limit,
            tags=",".join(tags) if tags else None,
            envvars=runner_env,
            event_handler=collector.handle,
            quiet=True,
            timeout=timeout_s,
            verbosity=verbosity or None,
        )
        duration = time.monotonic() - started
        artifact_dir = Path(runner.config.artifact_dir) if keep_artifacts or not temporary else None
        rc = int(runner.rc) if runner.rc is not None else -1
        status = str(runner.status)
    finally:
        if temporary and not keep_artifacts:
            shutil.rmtree(data_dir, ignore_errors=True)

    failed = list(collector.failed_tasks)
    if rc != 0 and not failed:
        failed.append(FailedTask(host="", task="", message=collector.error_output() or status))
    return PlaybookResult(
        playbook=playbook_path,
        rc=rc,
        status=status,
        hosts=collector.host_stats(),
        failed_tasks=tuple(failed),
        duration_s=duration,
        artifact_dir=artifact_dir,
    )


def _runner_inventory(inventory: str | Path | Mapping[str, Any]) -> str | dict[str, Any]:
    """The inventory as ansible-runner takes it: a dict, or the path of an existing file."""
    if isinstance(inventory, Mapping):
        return dict(inventory)
    inventory_path = Path(inventory).resolve()
    if not inventory_path.exists():
        raise RunnerError(f"inventory {inventory_path} does not exist")
    return str(inventory_path)


def _private_data_dir(private_data_dir: str | Path | None, project_dir: Path) -> Path:
    """The runner's private data dir, created: a temporary one when none is given; never inside the
    project, whose playbooks the artifacts must not be written into."""
    data_dir = (
        Path(tempfile.mkdtemp(prefix="clusterfab-runner-"))
        if private_data_dir is None
        else Path(private_data_dir).resolve()
    )
    if data_dir == project_dir or project_dir in data_dir.parents:
        raise RunnerError(
            f"private data dir {data_dir} is inside the project {project_dir}; "
            "runner artifacts must not be written into the playbooks"
        )
    data_dir.mkdir(parents=True, exist_ok=True)
    return data_dir


def _write_extravars(data_dir: Path, extravars: Mapping[str, Any]) -> None:
    # ansible-runner puts extravars given as an argument on the ansible-playbook command line,
    # where every user can read them in the process list; env/extravars is passed as -e @file.
    env_dir = data_dir / "env"
    env_dir.mkdir(exist_ok=True)
    extravars_file = env_dir / "extravars"
    extravars_file.touch(mode=0o600)
    # Marked unsafe: Ansible templates strings in variables; these are data (clusterfab.bootstrap.inert).
    extravars_file.write_text(json.dumps(inert(dict(extravars))))


def _find_ansible_playbook() -> str:
    # Prefer the interpreter's own environment: `python -m pytest` from a venv does not put the
    # venv's bin/ on PATH, and a system ansible-playbook of another version must not win.
    local = Path(sys.executable).parent / "ansible-playbook"
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    found = shutil.which("ansible-playbook")
    if found is None:
        raise RunnerError("ansible-playbook not found; install ansible-core (uv sync) first")
    return found


def _search_path(binary: str) -> str:
    # ansible-runner's `binary` option switches it to raw mode (no playbook argument, no event
    # callback), so the executable is chosen by putting its directory first on PATH instead.
    current = os.environ.get("PATH", os.defpath)
    return os.pathsep.join([str(Path(binary).parent), current])


class _EventCollector:
    """Turns runner events into PlaybookEvents, failures and recap counters."""

    def __init__(self, on_event: Callable[[PlaybookEvent], None] | None) -> None:
        self._on_event = on_event
        self.failed_tasks: list[FailedTask] = []
        self._stats: dict[str, dict[str, int]] = {}
        self._verbose: list[str] = []

    def handle(self, raw: dict[str, Any]) -> bool:
        kind = str(raw.get("event", ""))
        data: Mapping[str, Any] = raw.get("event_data") or {}
        result: Mapping[str, Any] = data.get("res") or {}
        host = data.get("host") or data.get("remote_addr")
        task = data.get("task")
        role = data.get("role")
        message: str | None = None

        if kind == "runner_on_failed" and not data.get("ignore_errors"):
            message = _failure_message(result)
            self.failed_tasks.append(
                FailedTask(host=str(host), task=str(task or ""), message=message, role=role)
            )
        elif kind == "runner_on_unreachable":
            message = _failure_message(result) or "host unreachable"
            self.failed_tasks.append(
                FailedTask(host=str(host), task=str(task or ""), message=message, role=role)
            )
        elif kind == "playbook_on_stats":
            self._stats = {key: dict(data.get(key) or {}) for key in _STATS_KEYS}
        elif kind == "verbose" and raw.get("stdout"):
            self._verbose.append(str(raw["stdout"]))

        if self._on_event is not None:
            self._on_event(
                PlaybookEvent(
                    kind=kind,
                    host=str(host) if host else None,
                    task=str(task) if task else None,
                    role=str(role) if role else None,
                    changed=bool(result.get("changed", False)),
                    message=message,
                    raw=raw,
                )
            )
        # ansible-runner only writes the event to artifacts (which its own stats read) when the
        # handler returns True.
        return True

    def host_stats(self) -> dict[str, HostStats]:
        hosts = sorted({host for counts in self._stats.values() for host in counts})
        return {
            host: HostStats(
                **{name: int(self._stats.get(key, {}).get(host, 0)) for key, name in _STATS_KEYS.items()}
            )
            for host in hosts
        }

    def error_output(self) -> str:
        text = "\n".join(line for line in self._verbose if line.strip())
        return text[-_MESSAGE_LIMIT:]


def _failure_message(result: Mapping[str, Any]) -> str:
    parts: list[str] = []
    msg = result.get("msg")
    if msg:
        parts.append(str(msg))
    items = result.get("results")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and item.get("failed"):
                parts.append(_failure_message(item))
                break
    for key in ("stderr", "module_stderr"):
        stderr = str(result.get(key) or "").strip()
        if stderr and stderr not in parts:
            parts.append(stderr)
    message = "\n".join(part for part in parts if part) or "task failed"
    return message[:_MESSAGE_LIMIT]


@dataclass
class _HostProgress:
    task: str = ""
    ok: int = 0
    changed: int = 0
    failed: int = 0
    skipped: int = 0
    unreachable: bool = False


class RunProgress:
    """Rich live view of a run: one row per host with its current task and counters.

    Use it as a context manager and pass :meth:`handle` as ``on_event``::

        with RunProgress(console) as progress:
            result = run_playbook(..., on_event=progress.handle)
        console.print(summary_table(result))
    """

    def __init__(self, console: Console | None = None, *, title: str = "Ansible") -> None:
        self._console = console or Console(stderr=True)
        self._title = title
        self._hosts: dict[str, _HostProgress] = {}
        self._live: Live | None = None

    def __enter__(self) -> RunProgress:
        self._live = Live(self.render(), console=self._console, refresh_per_second=4, transient=True)
        self._live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def handle(self, event: PlaybookEvent) -> None:
        """Update the view from one event."""
        if event.host is None:
            return
        state = self._hosts.setdefault(event.host, _HostProgress())
        if event.kind == "runner_on_start":
            state.task = event.task or ""
        elif event.kind == "runner_on_ok":
            state.ok += 1
            state.changed += int(event.changed)
        elif event.kind == "runner_on_failed":
            state.failed += 1
        elif event.kind == "runner_on_skipped":
            state.skipped += 1
        elif event.kind == "runner_on_unreachable":
            state.unreachable = True
        else:
            return
        if self._live is not None:
            self._live.update(self.render())

    def render(self) -> Table:
        """The current table: one row per host with its current task."""
        table = Table(title=self._title, expand=False)
        table.add_column("host", no_wrap=True)
        table.add_column("current task")
        for column in ("ok", "changed", "failed", "skipped"):
            table.add_column(column, justify="right")
        for host in sorted(self._hosts):
            state = self._hosts[host]
            task: RenderableType = (
                Text("unreachable", style="bold red") if state.unreachable else Text(state.task)
            )
            table.add_row(
                host,
                task,
                str(state.ok),
                Text(str(state.changed), style="yellow" if state.changed else ""),
                Text(str(state.failed), style="bold red" if state.failed else ""),
                str(state.skipped),
            )
        return table


def summary_table(result: PlaybookResult) -> RenderableType:
    """Recap per host and, when anything failed, a table of the failed tasks."""
    recap = Table(title=f"{result.playbook.name}: {result.status} in {result.duration_s:.1f}s")
    recap.add_column("host", no_wrap=True)
    for column in ("ok", "changed", "failed", "unreachable", "skipped"):
        recap.add_column(column, justify="right")
    for host, stats in sorted(result.hosts.items()):
        recap.add_row(
            host,
            str(stats.ok),
            str(stats.changed),
            str(stats.failed),
            str(stats.unreachable),
            str(stats.skipped),
        )
    if not result.failed_tasks:
        return recap
    failures = Table(title="Failures", show_lines=True)
    failures.add_column("host", no_wrap=True)
    failures.add_column("task")
    failures.add_column("message")
    for failed in result.failed_tasks:
        task = f"{failed.role} : {failed.task}" if failed.role else failed.task
        failures.add_row(failed.host or "-", task or "-", failed.message)
    return Group(recap, failures)
