"""CrossGuard's side of the policy tests: props and arguments made as the analyzer makes them, the
policies called as it calls them, and resources to check (an example's plan, an edited copy, or a
few resources declared with the providers' own SDKs under the mock engine)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format, struct_pb2
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.deserialize import deserialize_properties
from pulumi_policy.proxy import unknown_checking_proxy

from clusterfab.plan.engine import PlannedResource, run_program
from clusterfab.policy.pack import policies
from tests.deploy.conftest import cached_plan

LT = "aws:ec2/launchTemplate:LaunchTemplate"


def declared(program: Callable[[], None], stack: str = "prod") -> list[PlannedResource]:
    """The resources a small program declares with pulumi_aws / pulumi_gcp, as the engine records them:
    the property names are the providers' own, not ours."""
    return run_program(program, project="p", stack=stack).resources


def planned(example: str, env: str) -> list[PlannedResource]:
    return list(cached_plan(example, env).resources)


def edited(
    resources: Sequence[PlannedResource], type_: str, edit: Any, **changes: Any
) -> list[PlannedResource]:
    """The plan with the first resource of `type_` changed: `edit(inputs)` mutates a copy of its inputs."""
    out, done = [], False
    for resource in resources:
        if resource.type == type_ and not done:
            inputs = copy.deepcopy(resource.inputs)
            edit(inputs)
            out.append(PlannedResource(**{**resource.__dict__, "inputs": inputs, **changes}))
            done = True
        else:
            out.append(resource)
    assert done, f"no {type_} in the plan"
    return out


def crossguard_props(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """Props as the analyzer hands them to a policy (pulumi_policy's `Analyze` / `AnalyzeStack`): sent
    as a protobuf Struct (every number a float), deserialized, and wrapped in the proxies that raise on
    preview unknowns: nested objects and lists arrive as `Mapping` / `Sequence`, not dict / list."""
    wire = struct_pb2.Struct()
    wire.update(inputs)
    props: Mapping[str, Any] = unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(wire)))
    return props


def options(resource: PlannedResource) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        protect=resource.protect,
        ignore_changes=[],
        delete_before_replace=None,
        aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0),
        additional_secret_outputs=[],
        parent=resource.parent,
    )


def stack_args(
    resources: Sequence[PlannedResource], config: Mapping[str, Any] | None = None
) -> StackValidationArgs:
    made = {
        r.urn: PolicyResource(
            r.type, crossguard_props(r.inputs), r.urn, r.name, options(r), None, None, [], {}
        )
        for r in resources
    }
    for resource in resources:
        if resource.parent in made:
            made[resource.urn].parent = made[resource.parent]
    return StackValidationArgs(list(made.values()), config=config or {})


def violations(
    name: str, resources: Sequence[PlannedResource], config: Mapping[str, Any] | None = None
) -> list[str]:
    """What policy `name` reports for the resources, called as the analyzer calls it."""
    policy = next(p for p in policies() if p.name == name)
    found: list[str] = []

    def report(message: str, urn: str | None = None) -> None:
        found.append(message)

    if isinstance(policy, StackValidationPolicy):
        assert policy.validate(stack_args(resources, config), report) is None
        return found
    assert isinstance(policy, ResourceValidationPolicy)
    for r in resources:
        props = crossguard_props(r.inputs)
        args = ResourceValidationArgs(r.type, props, r.urn, r.name, options(r), None, config or {}, {})
        assert policy.validate(args, report) is None
    return found
