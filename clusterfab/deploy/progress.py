"""A live view of a preview, update or destroy, fed by the engine's events, and its final summary.

One line is printed per resource as it finishes (in a preview: per planned change), and on a
terminal a Rich live table below those lines shows the resources in progress and running counts.
Events arrive on the Automation API's watcher thread, so the state is guarded by a lock, and
`handle` never raises: an exception in the callback would kill the watcher and lose the rest of the
operation's events.

    with DeployProgress(console, operation="up", stack="prod") as progress:
        result = stack.up(on_event=progress.handle)
    console.print(progress.summary_text())
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clusterfab.deploy.events import (
    STACK_TYPE,
    DeployEvent,
    Diagnostic,
    PolicyViolation,
    ResourceStep,
    Summary,
)

Operation = Literal["preview", "up", "destroy", "preview-destroy"]

_PLANNED = {
    "create": "to create",
    "update": "to update",
    "delete": "to delete",
    "replace": "to replace",
    "same": "unchanged",
    "read": "to read",
    "import": "to import",
}
_DONE = {
    "create": "created",
    "update": "updated",
    "delete": "deleted",
    "replace": "replaced",
    "same": "unchanged",
    "read": "read",
    "import": "imported",
}
_SYMBOL = {"create": "+", "update": "~", "delete": "-", "replace": "+-", "same": " ", "read": ">"}
_REPLACEMENT_OPS = {"create-replacement", "delete-replaced", "replace"}
_ORDER = ["create", "update", "replace", "delete", "read", "import", "same"]


def _kind(op: str) -> str:
    """The user-facing kind of a step: the three steps of a replacement count as one replace."""
    return "replace" if op in _REPLACEMENT_OPS else op


@dataclass
class _Running:
    step: ResourceStep
    since: float


class DeployProgress:
    """Collects an operation's events and shows them while it runs."""

    def __init__(
        self,
        console: Console,
        *,
        operation: Operation,
        stack: str,
        live: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._console = console
        self.operation = operation
        self.stack = stack
        self._live_enabled = console.is_terminal if live is None else live
        self._clock = clock
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._running: dict[str, _Running] = {}
        self.steps: list[ResourceStep] = []
        """Every step as it started (what a preview would do), in order."""
        self.finished: list[ResourceStep] = []
        self.failed: list[ResourceStep] = []
        self.diagnostics: list[Diagnostic] = []
        self.policy_violations: list[PolicyViolation] = []
        self.summary: Summary | None = None
        self.callback_errors: list[str] = []

    @property
    def planning(self) -> bool:
        return self.operation in {"preview", "preview-destroy"}

    def __enter__(self) -> DeployProgress:
        if self._live_enabled:
            self._live = Live(
                get_renderable=self.render,
                console=self._console,
                refresh_per_second=4,
                transient=True,
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def handle(self, event: DeployEvent | None) -> None:
        """Take one event; never raises (a failure is remembered in `callback_errors`)."""
        if event is None:
            return
        try:
            with self._lock:
                line = self._apply(event)
            if line is not None:  # with a live view, Rich prints it above the table
                self._console.print(line, highlight=False)
        except Exception as exc:  # the watcher thread must survive whatever happens here
            self.callback_errors.append(f"{type(exc).__name__}: {exc}")

    def _apply(self, event: DeployEvent) -> Text | None:
        """Update the state; return the line to print for it, if any."""
        if isinstance(event, ResourceStep):
            return self._step(event)
        if isinstance(event, Diagnostic):
            self.diagnostics.append(event)
            if event.severity == "error" and event.message.strip():
                return Text(f"error: {event.message.strip()}", style="red")
            return None
        if isinstance(event, PolicyViolation):
            self.policy_violations.append(event)
            return Text(
                f"policy {event.policy} ({event.enforcement}): {event.message.strip()}", style="yellow"
            )
        if isinstance(event, Summary):
            self.summary = event
        return None

    def _step(self, step: ResourceStep) -> Text | None:
        if step.type == STACK_TYPE:
            return None
        if step.phase == "start":
            self.steps.append(step)
            if step.op != "same":
                self._running[step.urn] = _Running(step, self._clock())
            if self.planning and step.op not in {"same", "create-replacement", "delete-replaced"}:
                return self._line(step, _PLANNED.get(_kind(step.op), step.op))
            return None
        self._running.pop(step.urn, None)
        if step.phase == "failed":
            self.failed.append(step)
            return Text(f"  failed  {step.type}  {step.name}", style="bold red")
        self.finished.append(step)
        if self.planning or step.op in {"same", "create-replacement", "delete-replaced"}:
            return None
        return self._line(step, _DONE.get(_kind(step.op), step.op))

    @staticmethod
    def _line(step: ResourceStep, verb: str) -> Text:
        symbol = _SYMBOL.get(_kind(step.op), "*")
        what = step.changed or step.replace_keys
        changed = f"  ({', '.join(what)})" if what and step.op != "create" else ""
        return Text(f"{symbol:>2} {verb:<10} {step.type}  {step.name}{changed}")

    def counts(self) -> Counter[str]:
        """Resources per kind of change: from the engine's summary once it came, else from the steps."""
        if self.summary is not None and self.summary.changes:
            counted: Counter[str] = Counter()
            for op, count in self.summary.changes.items():
                if op in {"create-replacement", "delete-replaced"}:
                    continue
                counted[_kind(op)] += count
            return counted
        seen: dict[str, str] = {}
        for step in self.steps:
            if step.type != STACK_TYPE:
                seen.setdefault(step.urn, _kind(step.op))
        return Counter(seen.values())

    def render(self) -> RenderableType:
        """The live view: resources in progress and the running counts."""
        with self._lock:
            now = self._clock()
            running = sorted(self._running.values(), key=lambda r: r.since)
            done, failed = len(self.finished), len(self.failed)
        verb = (
            "previewing"
            if self.planning
            else {"up": "updating", "destroy": "destroying"}.get(self.operation, self.operation)
        )
        table = Table(title=f"{verb} {self.stack}", title_justify="left", expand=False)
        table.add_column("op", no_wrap=True)
        table.add_column("type", no_wrap=True)
        table.add_column("name")
        table.add_column("s", justify="right")
        for item in running[:20]:
            table.add_row(
                _kind(item.step.op), item.step.type, item.step.name, f"{max(0.0, now - item.since):.0f}"
            )
        more = f" (+{len(running) - 20} more)" if len(running) > 20 else ""
        status = Text(f"{len(running)} in progress{more}, {done} done, ")
        status.append(f"{failed} failed", style="bold red" if failed else "")
        return Group(table, status)

    def summary_text(self) -> str:
        """What happened, for people: the counts, failures with their errors, policy violations."""
        verbs = _PLANNED if self.planning else _DONE
        what = {
            "preview": "Preview",
            "up": "Update",
            "destroy": "Destroy",
            "preview-destroy": "Destroy preview",
        }
        counts = self.counts()
        parts = [f"{counts[k]} {verbs.get(k, k)}" for k in _ORDER if counts.get(k)]
        parts += [f"{n} {k}" for k, n in sorted(counts.items()) if k not in _ORDER and n]
        lines = [f"{what[self.operation]} of {self.stack}: {', '.join(parts) or 'no changes'}"]
        errors = [d for d in self.diagnostics if d.severity == "error" and d.message.strip()]
        for step in self.failed:
            lines.append(f"  failed: {step.type} {step.name}")
            lines += [f"    {d.message.strip()}" for d in errors if d.urn == step.urn]
        lines += [
            f"  error: {d.message.strip()}" for d in errors if d.urn not in {s.urn for s in self.failed}
        ]
        for violation in self.policy_violations:
            where = f" on {violation.urn.rsplit('::', 1)[-1]}" if violation.urn else ""
            lines.append(
                f"  policy {violation.pack}/{violation.policy} ({violation.enforcement}){where}: "
                f"{violation.message.strip()}"
            )
        lines += [f"  (progress display error: {e})" for e in self.callback_errors[:3]]
        return "\n".join(lines)

    def print_summary(self) -> None:
        self._console.print(escape(self.summary_text()), highlight=False)
