"""The rendered Slurm files the lab runs."""

from __future__ import annotations

from pathlib import Path

from clusterfab.scheduler.slurm.render import TASK_PROLOG

DATA = Path(__file__).parent / "data"
HEALTH_CHECK = (
    Path(__file__).resolve().parents[2] / "playbooks/roles/slurm_node/files/clusterfab_slurm_health.py"
)
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


def rendered_files(name: str = "handwritten") -> dict[str, str]:
    """The Slurm files (name -> content) of the lab's main cluster, with the slurm_node role's prolog
    and epilog.

    A fixed, hand-written set under data/<name> (three 8-GPU nodes `trainers-0..2`, the teams' QOS and
    accounts): the tests of Slurm's own behaviour (QOS limits, the health checks in the prolog and
    epilog, requeues, the deep check) run against it, unmoved by changes to the examples. What
    `clusterfab render slurm` writes for a blueprint runs in test_rendered_example.py (the aws-p5-slurm
    example) and test_elastic_lab.py (an elastic cluster).
    """
    return {**files_in(DATA / name), **node_scripts()}


def files_in(root: Path) -> dict[str, str]:
    """The files under ``root`` (``clusterfab render slurm --out DIR`` output) as name -> content."""
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}
