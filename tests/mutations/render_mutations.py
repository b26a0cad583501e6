"""Wrong renders a test must catch: small edits to the Slurm renderer and to the deep health check's
report, each with the tests that fail once it is applied to a copy of the tree (scripts/mutation_check.py).
Their tests are Slurm labs (marker `slurm`): they need root and debootstrap, as CI has.
"""

from __future__ import annotations

from tests.mutations import Mutation, replace_once

RENDER = "clusterfab/scheduler/slurm/render.py"
HEALTHCHECK = "clusterfab/scheduler/slurm/healthcheck.py"
SLURM_LAB = "tests/slurm/test_slurm_lab.py"
HEALTH_LAB = "tests/slurm/test_health_lab.py"


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "slurm-priority-decay-half-life",
        RENDER,
        replace_once('s("PriorityDecayHalfLife", "7-0")', 's("PriorityDecayHalfLife", "14-0")'),
        (f"{SLURM_LAB}::test_rendered_configuration_is_accepted",),
        "fair-share usage would decay over two weeks instead of one",
    ),
    Mutation(
        "slurm-mail-program-dropped",
        RENDER,
        replace_once('        s("MailProg", "/bin/true"),\n', ""),
        (f"{SLURM_LAB}::test_rendered_configuration_is_accepted",),
        "slurmctld logs an invalid MailProg at every start on a controller without a mailer",
    ),
    Mutation(
        "slurm-preemption-cancels",
        RENDER,
        replace_once('s("PreemptMode", "REQUEUE")', 's("PreemptMode", "CANCEL")'),
        (
            f"{SLURM_LAB}::test_rendered_configuration_is_accepted",
            f"{SLURM_LAB}::test_research_preempts_interns_by_requeue",
        ),
        "a preempted lower-priority job would be cancelled instead of requeued",
    ),
    Mutation(
        "slurm-qos-preempts-nobody",
        RENDER,
        replace_once(
            """attributes += [f"Preempt={','.join(lower)}", "PreemptMode=requeue"]""",
            """attributes += [f"Preempt={shlex.quote('')}", "PreemptMode=requeue"]""",
        ),
        (
            f"{SLURM_LAB}::test_rendered_configuration_is_accepted",
            f"{SLURM_LAB}::test_research_preempts_interns_by_requeue",
        ),
        "a high-priority team would wait for a low-priority team's jobs instead of preempting them",
    ),
    Mutation(
        "slurm-gpu-cap-doubled",
        RENDER,
        replace_once('f"GrpTRES=gres/gpu={team.max_gpus}"', 'f"GrpTRES=gres/gpu={team.max_gpus * 2}"'),
        (
            f"{SLURM_LAB}::test_rendered_configuration_is_accepted",
            f"{SLURM_LAB}::test_team_at_its_gpu_cap_waits_while_another_team_runs",
            f"{SLURM_LAB}::test_exclusive_partition_charges_a_small_job_the_whole_node",
        ),
        "a team could run on twice the GPUs its blueprint allows",
    ),
    Mutation(
        "slurm-gpu-budget-wrong-unit",
        RENDER,
        replace_once("team.gpu_hours_per_month * 60}", "team.gpu_hours_per_month * 50}"),
        (
            f"{SLURM_LAB}::test_rendered_configuration_is_accepted",
            f"{SLURM_LAB}::test_gpu_minute_budget_keeps_out_jobs_that_could_overrun_it",
        ),
        "a team's monthly GPU-minute budget would be a sixth short (50 minutes to the hour)",
    ),
    Mutation(
        "health-report-drops-failures",
        HEALTHCHECK,
        replace_once('"failures": v.failures,', '"failures": [],'),
        (
            f"{HEALTH_LAB}::test_deep_check_reports_per_node_and_drains_the_failing_one",
            f"{HEALTH_LAB}::test_deep_check_blames_the_slow_node_of_a_pair",
            f"{HEALTH_LAB}::test_deep_check_cuts_off_a_hanging_nccl_test_and_skips_busy_nodes",
            f"{HEALTH_LAB}::test_an_nccl_test_that_is_not_one_world_blames_no_node",
        ),
        "`clusterfab health --format json` would report failed nodes without their failures",
    ),
)
