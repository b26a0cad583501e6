"""The offline plan engine: a Pulumi program run under the SDK's mock engine.

The program registers its resources with a recording monitor instead of a cloud: we keep each
resource's type token, name, parent, protect flag and inputs exactly as the engine would receive them
(Pulumi's camelCase property names), then drain every pending RPC and output. Nothing here talks to a
cloud, reads credentials or needs the Pulumi CLI. Runs are repeatable within one process.

Mock outputs are deterministic so that plans (and golden files) are stable: a resource's id is
`<name>-id`, and the computed attributes programs commonly wire between resources (arn, dns names,
self links) get placeholder values derived from the resource name.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as pulumi_resource
from pulumi.runtime.proto import source_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from clusterfab.clouds import profiles
from clusterfab.clouds.base import ComputedOutputs
from clusterfab.core.errors import ClusterfabError

SECRET = "[secret]"
UNKNOWN = "[unknown]"
STACK_TYPE = "pulumi:pulumi:Stack"

HEALTH_SIGNING_KEY = "pulumi-python:dynamic/clusterfab:HealthSigningKey"
"""The health signing key's dynamic resource (components/health_signing.py): no cloud's own."""


def _mock_outputs() -> list[tuple[str, ComputedOutputs]]:
    """The mocks' computed attributes per type-token prefix: every cloud's (`CloudProfile.plan_mocks`)
    and, as a fixed stand-in for the key the provider makes at create, the health signing key's."""
    found = [
        (prefix, outputs) for cloud in profiles() for prefix, outputs in cloud.plan_mocks.outputs.items()
    ]
    return [*found, (HEALTH_SIGNING_KEY, lambda _t, _n: {"key": "0" * 64})]


def _with_computed(given: Any, computed: Any) -> Any:
    """An input keeps its value; a computed value fills in what the input lacks, including the
    computed fields of a block (an EKS cluster's `vpcConfig` gets its `clusterSecurityGroupId`, a GKE
    cluster's `controlPlaneEndpointsConfig.dnsEndpointConfig` its `endpoint`) and of a list of blocks
    (Filestore's `networks` input gets its `ipAddresses`). A computed value that is a function makes the
    output from the input: an output whose type differs from its input's (Azure takes a scale set's
    user-assigned identities as a list of ids and returns them as a map)."""
    if callable(computed):
        return computed(given)
    if given is None:
        return computed
    if isinstance(given, dict) and isinstance(computed, dict):
        return {**computed, **{key: _with_computed(value, computed.get(key)) for key, value in given.items()}}
    if isinstance(given, list) and isinstance(computed, list) and computed and isinstance(computed[0], dict):
        return [{**computed[0], **item} if isinstance(item, dict) else item for item in given]
    return given


class PlanError(ClusterfabError):
    """The program could not be planned (it raised, or registered two resources with one URN)."""

    exit_code = 1


@dataclass(frozen=True)
class PlannedResource:
    """One resource the program registered."""

    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    protect: bool
    inputs: dict[str, Any]
    provider: str | None = None
    """The provider reference (`<provider urn>::<id>`) a custom resource is created with; the engine
    passes it, the plan JSON leaves it out."""
    id: str | None = None
    """The mock id (`<name>-id`) other resources' inputs carry when they reference this one."""
    computed: dict[str, Any] = field(default_factory=dict)
    """The outputs the mocks made up (what the inputs did not set: auto-name, arn, self link, ...).
    Like the id, a replacement changes them, and with them every input that carries one."""
    before_delete: tuple[str, ...] = ()
    """The names of the resource hooks bound to run before its delete (the `hooks` option); the plan
    JSON leaves them out."""
    dependencies: tuple[str, ...] = ()
    """The URNs of the resources it depends on (through its inputs or `depends_on`): the engine deletes
    it before them. The plan JSON leaves them out."""
    ignore_changes: tuple[str, ...] = ()
    """The inputs whose changes an update leaves alone (the `ignore_changes` option): a diff does not
    count them. The plan JSON leaves them out."""
    retain_on_delete: bool = False
    """Whether deleting it from the stack leaves it in the cloud (the `retain_on_delete` option). The
    plan JSON leaves it out."""

    def to_json(self) -> dict[str, Any]:
        """The resource as the plan JSON shows it; the inputs are a copy, so what a caller does to them
        leaves the plan as planned."""
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "custom": self.custom,
            "protect": self.protect,
            "inputs": copy.deepcopy(self.inputs),
        }


@dataclass(frozen=True)
class ProgramRun:
    """What a program did under the mock engine."""

    project: str
    stack: str
    resources: list[PlannedResource]
    outputs: dict[str, Any]
    logs: list[tuple[str, str]] = field(default_factory=list)


def redact(value: Any) -> Any:
    """Replace secrets by "[secret]" and unknowns by "[unknown]", recursively; name file assets by
    their file name (their absolute path differs between machines), show a string asset's text."""
    if rpc.is_rpc_secret(value):
        return SECRET
    if isinstance(value, pulumi.asset.StringAsset):
        # Its text is what it holds (a boot script kept in a bucket): shown, so a diff sees it change.
        return value.text
    if isinstance(value, pulumi.asset.Asset | pulumi.asset.Archive):
        location = getattr(value, "path", None) or getattr(value, "uri", None) or type(value).__name__
        return f"[asset {str(location).rsplit('/', 1)[-1]}]"
    # A computed attribute the mocks cannot know (a subnet's zone name, given its zone id) arrives as the
    # SDK's Unknown, as a preview shows it.
    if value == rpc.UNKNOWN or isinstance(value, pulumi.output.Unknown):
        return UNKNOWN
    if isinstance(value, dict):
        # Sorted: the wire format's maps come back in no fixed order, and plans must be stable.
        return {k: redact(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        # The engine's wire format has only floats; counts and ports read better as ints.
        return int(value)
    return value


class _Mocks(mocks.Mocks):
    def __init__(self) -> None:
        super().__init__()
        self.computed = _mock_outputs()
        self.calls = [cloud.plan_mocks.call for cloud in profiles()]

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        # The engine knows auto-names at preview (the provider computes them in Check); the real
        # name has a random suffix, the mock uses the logical name.
        state.setdefault("name", args.name)
        for prefix, computed in self.computed:
            if args.typ.startswith(prefix):
                for key, value in computed(args.typ, args.name).items():
                    state[key] = _with_computed(state.get(key), value)
        return f"{args.name}-id", state

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        # No check failures: an empty list (the SDK iterates it; None fails in pulumi 3.272).
        for call in self.calls:
            result = call(args.token, args.args)
            if result is not None:
                return result, []
        return {}, []


class _RecordingMonitor(mocks.MockMonitor):
    """Keeps every registration; registrations arrive on executor threads, hence the lock."""

    def __init__(self, project: str, stack: str) -> None:
        super().__init__(_Mocks())
        self.project = project
        self.stack = stack
        self.records: dict[str, PlannedResource] = {}
        self.duplicates: list[str] = []
        self._lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The real engine qualifies a child's type with its parent's whole type chain (not only its
        # last segment, as the SDK's mock does) and never with the root stack's type.
        if parent:
            qualified = parent.split("::")[2]
            if qualified != STACK_TYPE:
                type_ = f"{qualified}${type_}"
        return f"urn:pulumi:{self.stack}::{self.project}::{type_}::{name}"

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - the gRPC method name
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type == STACK_TYPE:
            return response
        inputs = redact(rpc.deserialize_properties(request.object))
        record = PlannedResource(
            urn=response.urn,
            type=request.type,
            name=request.name,
            parent=request.parent or None,
            custom=bool(request.custom),
            protect=bool(request.protect),
            inputs=inputs,
            provider=request.provider or None,
            id=response.id or None,
            computed=_computed(inputs, redact(rpc.deserialize_properties(response.object))),
            before_delete=tuple(request.hooks.before_delete),
            dependencies=tuple(request.dependencies),
            ignore_changes=tuple(request.ignoreChanges),
            retain_on_delete=bool(request.retainOnDelete),
        )
        with self._lock:
            if record.urn in self.records:
                self.duplicates.append(record.urn)
            self.records[record.urn] = record
        return response


def _computed(inputs: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if inputs.get(key) != value}


class _LogCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[tuple[str, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append((record.levelname.lower(), record.getMessage()))


_RUN_LOCK = threading.Lock()


@contextlib.contextmanager
def _without_gc() -> Iterator[None]:
    """Run the program without the cyclic garbage collector. A plan allocates hundreds of thousands of
    futures, outputs and closures that all live until the end; each collection scans every one of them
    again, which made a plan's time per resource grow with its size. What the run leaves behind is
    collected once, afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def _without_source_positions() -> Iterator[None]:
    """Skip the SDK's source positions while planning: for every resource it walks the whole call stack
    and turns each frame into a file URI (a tenth of a plan's time), for the engine to show in errors;
    the mock engine records none of it. Without the private function (another SDK version) nothing
    changes."""
    module = pulumi_resource
    original = getattr(module, "_get_stack_trace", None)
    if original is None:
        yield
        return
    module._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        module._get_stack_trace = original


def run_program(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str] | None = None,
    secret_keys: list[str] | None = None,
    preview: bool = True,
) -> ProgramRun:
    """Run a Pulumi program under mocks and return what it registered and exported.

    `config` keys are namespaced ("clusterfab:blueprint"); values are strings, as in a stack file.
    """
    with _RUN_LOCK:  # the SDK keeps its settings in process-wide state
        settings.ROOT.set(None)
        pulumi.runtime.set_all_config(dict(config or {}), secret_keys or [])
        monitor = _RecordingMonitor(project, stack)
        logger = logging.getLogger(f"clusterfab.plan.{id(monitor)}")
        collector = _LogCollector()
        logger.addHandler(collector)
        logger.propagate = False
        mocks.set_mocks(
            monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor, logger=logger
        )
        try:
            with _without_source_positions(), _without_gc():
                _sync_await(run_pulumi_func(program))
            root = settings.get_root_resource()
            raw_outputs = dict(getattr(root, "outputs", {}) or {})
            outputs = {key: redact(_resolve(value)) for key, value in raw_outputs.items()}
        except pulumi.RunError as exc:
            raise PlanError(str(exc)) from None
        finally:
            logger.removeHandler(collector)
        if monitor.duplicates:
            raise PlanError(
                "the program registered the same resource twice: " + ", ".join(monitor.duplicates)
            )
        resources = sorted(monitor.records.values(), key=lambda r: r.urn)
        return ProgramRun(
            project=project, stack=stack, resources=resources, outputs=outputs, logs=collector.messages
        )


def _resolve(value: Any) -> Any:
    """The plain value of a stack output (Outputs resolved; unknown in preview -> UNKNOWN)."""
    output = pulumi.Output.from_input(value)
    known = _sync_await(output.is_known())
    if not known:
        return UNKNOWN
    if _sync_await(output.is_secret()):
        return SECRET
    resolved = _sync_await(output.future())
    return resolved
