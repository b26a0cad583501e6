"""The template attack at the hosts: every string variable a GPU node's playbook and its health check get
(what the stack renders for the EFA example, with the lab's package sources) is replaced by a template
that would run a command on the machine that runs Ansible (`lookup('pipe', ...)` runs where
ansible-playbook runs: the node itself at boot, the CI runner in push mode). The runner hands the
variables over marked unsafe, so however far the plays get before their own checks refuse the values, no
task renders one: no marker file is ever written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import chroot_standins as standins
import chroot_variants as variants
import pytest
from chroot_runs import run_in_chroot

from clusterfab.provision.extravars import healthcheck_vars
from tests.factories import example_spec

pytestmark = pytest.mark.ansible


def _poisoned(value: Any, markers: Path, path: str = "v") -> Any:
    """`value` with every string replaced by a template that would touch `markers/<its path>`."""
    if isinstance(value, str):
        return f"{{{{ lookup('ansible.builtin.pipe', 'touch {markers}/{path}') }}}}"
    if isinstance(value, dict):
        return {key: _poisoned(item, markers, f"{path}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_poisoned(item, markers, f"{path}.{i}") for i, item in enumerate(value)]
    return value


def test_no_task_renders_a_variable_that_holds_a_template(
    fresh_rootfs: Callable[[str], Path], built_standins: standins.Standins, tmp_path: Path
) -> None:
    rootfs = fresh_rootfs("hostile-vars")
    spec = example_spec("aws-p5-efa-fsx")
    plays = {
        "gpu_node.yml": variants.efa_p5(built_standins),
        "healthcheck.yml": healthcheck_vars(spec, spec.node_groups[0], variants.CATALOG),
    }
    poisoned = 0
    for playbook, variables in plays.items():
        hostile = _poisoned(variables, tmp_path)
        poisoned += str(hostile).count("lookup(")
        run_in_chroot(playbook, rootfs, hostile)
    assert poisoned > 60  # every string the plays get, the catalog's versions and URLs included
    assert sorted(p.name for p in tmp_path.iterdir()) == []
