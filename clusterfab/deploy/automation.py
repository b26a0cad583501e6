"""The thin layer over Pulumi's Automation API: select stacks, read them, run operations.

Everything here drives the real `pulumi` CLI (which must be installed and logged in to a backend) in
the clusterfab project directory, so the CLI honours `stackConfigDir: stacks` itself. Stack config is
read and written through the CLI (`get_all_config` / `set_config`): the workspace's own settings
helpers ignore stackConfigDir. Engine events reach callers as `clusterfab.deploy.events` records
through a callback that never raises (an exception would kill the Automation API's watcher thread).

`pulumi.automation` is imported inside functions, so importing this module costs nothing.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from clusterfab.core.errors import ClusterfabError, UsageError
from clusterfab.deploy.events import DeployEvent, to_record
from clusterfab.plan.project import Project, find_project

if TYPE_CHECKING:
    from pulumi import automation as auto

INSTALL_HINT = (
    "the Pulumi CLI (`pulumi`) is not installed or not on PATH: install the Pulumi CLI "
    "(https://www.pulumi.com/docs/install/), log in to a state backend with `pulumi login`, "
    "then run this again"
)
WORKSPACE_ENV = {"PULUMI_SKIP_UPDATE_CHECK": "true"}
POLICY_PACK_DIR = "policy"
"""The project's CrossGuard pack (serving `clusterfab.policy`), enforced on preview, up and promote."""
_CHANGING_KINDS = frozenset({"update", "import", "destroy"})
"""History kinds that change resources (a refresh only reads them)."""
_HISTORY_PAGE = 20

EventHandler = Callable[[DeployEvent | None], None]
_T = TypeVar("_T")


class DeployError(ClusterfabError):
    """An operation on a real stack failed (exit 1); the message is the CLI's error."""

    exit_code = 1


@dataclass(frozen=True, slots=True)
class OperationResult:
    ok: bool
    changes: Mapping[str, int] = field(default_factory=dict)
    """Resources per step operation, as the engine counted them (empty when unknown)."""
    error: str | None = None
    """The CLI's error, one line, when not ok."""


_ERROR_LINE = re.compile(r"\s*error:\s*(?P<message>.+)", re.IGNORECASE)


def error_summary(text: str) -> str:
    """One line from a failed CLI call: its `error:` lines, else the last line it wrote to stderr."""
    stderr = text.split("\n stderr:", 1)[1] if "\n stderr:" in text else text
    errors = [m["message"].strip() for line in stderr.splitlines() if (m := _ERROR_LINE.fullmatch(line))]
    if errors:
        return "; ".join(dict.fromkeys(errors))
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if not lines and "\n stdout:" in text:
        stdout = text.split("\n stdout:", 1)[1].split("\n stderr:", 1)[0]
        lines = [line.strip() for line in stdout.splitlines() if line.strip()]
    return lines[-1] if lines else "the pulumi CLI failed without saying why"


def pulumi_command() -> auto.PulumiCommand:
    """The installed Pulumi CLI; UsageError (exit 2) with what to install when there is none."""
    found = shutil.which("pulumi")
    if found is None:
        raise UsageError(INSTALL_HINT)
    from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

    path = Path(found)
    # PulumiCommand(root) runs <root>/bin/pulumi (and puts that directory first on PATH for plugins).
    root = str(path.parent.parent) if path.parent.name == "bin" else None
    try:
        return auto.PulumiCommand(root=root)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise UsageError(f"the Pulumi CLI at {found} does not run ({exc}); reinstall it") from None
    except auto.InvalidVersionError as exc:
        raise UsageError(f"the Pulumi CLI at {found} is not usable: {exc}") from None


def guarded(handler: EventHandler | None) -> Callable[[Any], None] | None:
    """An `on_event` callback for the Automation API that converts events and never raises."""
    if handler is None:
        return None

    def on_event(event: Any) -> None:
        try:
            handler(to_record(event))
        except Exception:  # an exception here would kill the watcher thread and lose the operation
            return

    return on_event


def _ignore(_line: str) -> None:
    return


class DeployProject:
    """The clusterfab project as a Pulumi workspace (one per command; stacks share it)."""

    def __init__(self, project: Project, command: auto.PulumiCommand | None = None) -> None:
        from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

        self.project = project
        try:
            self._workspace = auto.LocalWorkspace(
                work_dir=str(project.root),
                pulumi_command=command or pulumi_command(),
                env_vars=dict(WORKSPACE_ENV),
            )
        except FileNotFoundError:
            raise UsageError(INSTALL_HINT) from None

    @property
    def policy_packs(self) -> list[str]:
        """The CrossGuard packs every preview and update runs under: the project's own `policy/`."""
        pack = self.project.root / POLICY_PACK_DIR
        return [str(pack)] if (pack / "PulumiPolicy.yaml").is_file() else []

    def stack(self, name: str) -> DeployStack:
        """Select an existing stack; UsageError (exit 2) when it does not exist or cannot be reached."""
        from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

        try:
            stack = auto.Stack.select(name, self._workspace)
        except auto.StackNotFoundError:
            raise UsageError(
                f"stack {name} does not exist: create it with `pulumi stack init {name}` in "
                f"{self.project.root} (its config lives in stacks/Pulumi.{name.rsplit('/', 1)[-1]}.yaml)"
            ) from None
        except auto.CommandError as exc:
            raise UsageError(f"pulumi could not select stack {name}: {error_summary(str(exc))}") from None
        return DeployStack(name, stack, self.policy_packs)


class DeployStack:
    """One selected stack: its outputs and config, and the operations on it."""

    def __init__(self, name: str, stack: auto.Stack, policy_packs: list[str] | None = None) -> None:
        self.name = name
        self._stack = stack
        self._policy_packs = policy_packs or None

    def outputs(self) -> dict[str, Any]:
        """The stack's outputs from its last update (secrets in clear)."""
        return {key: value.value for key, value in self._run(self._stack.outputs).items()}

    def config(self) -> dict[str, str]:
        """The stack's config (`namespace:key` -> value, secrets in clear)."""
        return {key: str(value.value) for key, value in self._run(self._stack.get_all_config).items()}

    def set_config(self, key: str, value: str) -> None:
        from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

        self._run(lambda: self._stack.set_config(key, auto.ConfigValue(value=value, secret=False)))

    def last_update(self) -> dt.datetime | None:
        """When the stack's resources last changed: the end of its latest update, import or destroy
        (None when it never had one)."""
        history = self._run(lambda: self._stack.history(page_size=_HISTORY_PAGE))  # newest first
        changing = [e for e in history if e.kind in _CHANGING_KINDS]
        # A page of nothing but refreshes: the newest entry is a safe (later) bound.
        entry = changing[0] if changing else (history[0] if history else None)
        if entry is None:
            return None
        when: dt.datetime = entry.end_time or entry.start_time
        return when if when.tzinfo else when.replace(tzinfo=dt.UTC)  # the CLI writes UTC

    def protected_resources(self) -> list[tuple[str, str]]:
        """(URN, type) of every protected resource in the stack's state."""
        state = self._run(self._stack.export_stack).deployment or {}
        resources = state.get("resources") or []
        return [(r.get("urn", ""), r.get("type", "")) for r in resources if r.get("protect")]

    def preview(
        self, on_event: EventHandler | None = None, *, save_plan: Path | None = None
    ) -> OperationResult:
        """Preview the stack under the policy pack; with `save_plan`, write the update plan there."""
        plan = str(save_plan) if save_plan is not None else None
        return self._operation(
            lambda: (
                self._stack.preview(
                    color="never",
                    on_output=_ignore,
                    on_event=guarded(on_event),
                    policy_packs=self._policy_packs,
                    plan=plan,
                ).change_summary
            )
        )

    def up(self, on_event: EventHandler | None = None, *, plan: Path | None = None) -> OperationResult:
        """Update the stack under the policy pack; with `plan`, only as that update plan says."""
        constrained = str(plan) if plan is not None else None
        return self._operation(
            lambda: (
                self._stack.up(
                    color="never",
                    on_output=_ignore,
                    on_event=guarded(on_event),
                    policy_packs=self._policy_packs,
                    plan=constrained,
                ).summary.resource_changes
            )
        )

    # Destroy runs the program (`--run-program`): the delete hooks it registers (the teardown of the
    # instances Slurm created, bound to every node group of a Slurm cluster) run only then, and the engine
    # refuses to destroy a stack whose resources have delete hooks without it (Pulumi 3.182,
    # pulumi/pulumi#19933; https://www.pulumi.com/docs/iac/concepts/resources/options/hooks/). The preview
    # runs it too, so that what is previewed is what goes. The stack's blueprint must therefore still load.
    def preview_destroy(self, on_event: EventHandler | None = None) -> OperationResult:
        return self._operation(
            lambda: (
                self._stack.preview_destroy(
                    color="never", on_output=_ignore, on_event=guarded(on_event), run_program=True
                ).change_summary
            )
        )

    def destroy(self, on_event: EventHandler | None = None) -> OperationResult:
        return self._operation(
            lambda: (
                self._stack.destroy(
                    color="never", on_output=_ignore, on_event=guarded(on_event), run_program=True
                ).summary.resource_changes
            )
        )

    def _operation(self, run: Callable[[], Mapping[Any, int] | None]) -> OperationResult:
        from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

        try:
            changes = run() or {}
        except auto.CommandError as exc:
            return OperationResult(ok=False, error=error_summary(str(exc)))
        except RuntimeError as exc:  # "summary event never found": the engine never ran
            return OperationResult(ok=False, error=str(exc))
        return OperationResult(
            ok=True, changes={str(getattr(k, "value", k)): int(v) for k, v in changes.items()}
        )

    def _run(self, call: Callable[[], _T]) -> _T:
        from pulumi import automation as auto  # noqa: PLC0415 - lazy: it loads grpc

        try:
            return call()
        except auto.CommandError as exc:
            raise DeployError(f"pulumi failed on stack {self.name}: {error_summary(str(exc))}") from None


def open_project(start: Path | None = None) -> DeployProject:
    """The clusterfab project around `start` (default: the current directory) as a Pulumi workspace.

    Checks for the CLI first, so that a missing CLI is the error a user sees (exit 2).
    """
    command = pulumi_command()
    return DeployProject(find_project(start or Path.cwd()), command)
