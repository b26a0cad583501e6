"""The rendered Slurm files the lab runs."""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
from pathlib import Path

from clusterfab.scheduler.slurm.render import TASK_PROLOG
from tests.conftest import REPO

LAB_BLUEPRINT = REPO / "tests/fixtures/blueprints/slurm-lab.yaml"
"""The lab's main cluster: cluster `lab`, three 8-GPU nodes `trainers-0..2`, teams research and interns."""
HEALTH_CHECK = REPO / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
"""The slurm_node role's prolog and epilog: the lab runs the role's own script (its defaults: 8 GPUs)."""


TASK_ENV = HEALTH_CHECK.with_name("clusterfab_task_env.py")
"""The slurm_node role's TaskProlog program (the fabric environment for each task)."""


def node_scripts() -> dict[str, str]:
    """The prolog.d and epilog.d entries and the TaskProlog the slurm_node role installs on every GPU
    node (the TaskProlog by its absolute path)."""
    text = HEALTH_CHECK.read_text()
    return {
        "prolog.d/50-clusterfab-health": text,
        "epilog.d/50-clusterfab-health": text,
        TASK_PROLOG: TASK_ENV.read_text(),
    }


def render(blueprint: Path, out: Path) -> dict[str, str]:
    """What `clusterfab render slurm BLUEPRINT --out DIR` writes, as name -> content: the command the
    operator runs, so the lab runs exactly what an operator would get."""
    proc = subprocess.run(
        [sys.executable, "-m", "clusterfab", "render", "slurm", str(blueprint), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return files_in(out)


@functools.cache
def _lab_render() -> tuple[tuple[str, str], ...]:
    with tempfile.TemporaryDirectory(prefix="clusterfab-slurm-lab-render-") as out:
        return tuple(render(LAB_BLUEPRINT, Path(out)).items())


def rendered_files() -> dict[str, str]:
    """The Slurm files (name -> content) of the lab's main cluster: `clusterfab render slurm` of
    LAB_BLUEPRINT (rendered once per test process), with the slurm_node role's prolog, epilog and
    TaskProlog.

    The tests of Slurm's own behaviour under clusterfab's configuration (QOS caps, GPU-minute budgets,
    preemption, the health checks in the prolog and epilog, requeues, the deep check) run on it; the lab
    changes only what one machine running every daemon must (overrides.py, the list asserted exactly in
    test_overrides.py), so a change to the renderer reaches these tests. The aws-p5-slurm example runs in
    test_rendered_example.py, an elastic cluster in test_elastic_lab.py.
    """
    return {**dict(_lab_render()), **node_scripts()}


def files_in(root: Path) -> dict[str, str]:
    """The files under ``root`` (``clusterfab render slurm --out DIR`` output) as name -> content."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
