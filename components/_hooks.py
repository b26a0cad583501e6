"""Resource hooks on components' children (Pulumi's `hooks` resource option).

A hook bound to a component fires on the component's own lifecycle only, never its children's
(https://www.pulumi.com/docs/iac/concepts/resources/options/hooks/), and a component is deleted after its
children; so a component binds a hook it is given to the child whose delete must wait for it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi


def delete_hooks(before_delete: Sequence[pulumi.ResourceHook]) -> pulumi.ResourceHookBinding | None:
    """The binding of `before_delete` hooks (None when there are none: the resource is registered as
    before). Delete hooks must be named `ResourceHook`s: the engine finds them by name when the resource
    goes, even after the resource left the program."""
    if not before_delete:
        return None
    return pulumi.ResourceHookBinding(before_delete=list(before_delete))
