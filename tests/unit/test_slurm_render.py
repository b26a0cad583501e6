"""`clusterfab render slurm`: Slurm's files rendered from a ClusterSpec, exactly; the target release's
features; the blueprint's scheduler and teams resolved into the spec. (That a real slurmctld accepts the
files and enforces them is tests/slurm.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm import SlurmRenderError, render_slurm
from clusterfab.spec import ClusterSpec
from tests.conftest import REPO
from tests.factories import example, example_spec, spec

FACTS = load_catalog().slurm


def settings(text: str) -> dict[str, str]:
    """slurm.conf's Key=Value lines (not Node/Partition lines) as a dict."""
    pairs = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "NodeName=", "PartitionName=")):
            key, _, value = line.partition("=")
            pairs[key] = value
    return pairs


def lines_starting(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


def slurm_spec(**fields: Any) -> ClusterSpec:
    groups = fields.pop("node_groups", [{"name": "h100", "machine_type": "p5.48xlarge", "count": 4}])
    return spec(node_groups=groups, scheduler={"kind": "slurm", **fields.pop("scheduler", {})}, **fields)


def test_the_example_renders_every_contract_file() -> None:
    files = render_slurm(example_spec("aws-p5-slurm", "prod"), FACTS)
    assert sorted(files) == [
        "accounts.cfg",
        "cgroup.conf",
        "gres.conf",
        "plugstack.conf",  # the example runs job steps in containers (containers: pyxis)
        "qos.cfg",
        "slurm.conf",
        "slurmdbd.conf",
        "topology.conf",
    ]


def test_nodes_carry_the_catalogs_cpus_memory_and_gpus() -> None:
    conf = render_slurm(example_spec("aws-p5-slurm", "prod"), FACTS)["slurm.conf"]
    # p5.48xlarge: 192 vCPUs, 2,048 GiB (95% offered to jobs: 2048 x 1024 x 0.95 = 1,992,294 MiB), 8 H100.
    assert lines_starting(conf, "NodeName=") == [
        "NodeName=h100-[0-7] CPUs=192 RealMemory=1992294 Gres=gpu:h100:8 State=UNKNOWN"
    ]
    assert lines_starting(conf, "PartitionName=") == [
        "PartitionName=train Nodes=h100-[0-7] Default=YES MaxTime=7-00:00:00 DefaultTime=01:00:00 State=UP "
        "OverSubscribe=EXCLUSIVE"
    ]


def test_slurm_conf_tracks_gpus_and_enforces_limits() -> None:
    conf = settings(render_slurm(example_spec("aws-p5-slurm", "prod"), FACTS)["slurm.conf"])
    assert conf["ClusterName"] == "llm-slurm"
    # 10.30.0.0/16: the nodes' subnet is 10.30.0.0/20, the controller its host 10.
    assert conf["SlurmctldHost"] == "llm-slurm-controller(10.30.0.10)"
    assert conf["AccountingStorageHost"] == "10.30.0.10"
    assert conf["SlurmctldParameters"] == "enable_configless"
    assert conf["SelectType"] == "select/cons_tres"
    assert conf["GresTypes"] == "gpu"
    assert (conf["ProctrackType"], conf["TaskPlugin"]) == ("proctrack/cgroup", "task/cgroup,task/affinity")
    assert conf["PrologFlags"] == "Alloc,Contain"
    assert conf["SchedulerParameters"] == "nohold_on_prolog_fail"
    assert conf["PriorityType"] == "priority/multifactor"
    assert conf["PriorityWeightTRES"] == "GRES/gpu=1000"
    assert conf["AccountingStorageTRES"] == "gres/gpu,gres/gpu:h100"
    assert conf["AccountingStorageEnforce"] == "associations,limits,qos,safe"
    assert conf["PriorityUsageResetPeriod"] == "MONTHLY"
    assert (conf["PreemptType"], conf["PreemptMode"]) == ("preempt/qos", "REQUEUE")
    assert conf["SrunPortRange"] == "60001-63000"
    assert conf["TopologyPlugin"] == "topology/tree"


def test_gres_and_topology() -> None:
    files = render_slurm(example_spec("aws-p5-slurm", "prod"), FACTS)
    assert lines_starting(files["gres.conf"], "NodeName=") == [
        "NodeName=h100-[0-7] Name=gpu Type=h100 File=/dev/nvidia[0-7]"
    ]
    assert lines_starting(files["topology.conf"], "SwitchName=") == ["SwitchName=h100 Nodes=h100-[0-7]"]


def test_each_team_is_an_account_with_its_qos() -> None:
    files = render_slurm(example_spec("aws-p5-slurm", "prod"), FACTS)
    assert files["accounts.cfg"].splitlines() == [
        "Cluster - 'llm-slurm'",
        "Parent - 'root'",
        "Account - 'research':Description='team research':Organization='llm-slurm':QOS='research'"
        ":DefaultQOS='research'",
        "Account - 'applied':Description='team applied':Organization='llm-slurm':QOS='applied'"
        ":DefaultQOS='applied'",
        "Account - 'interns':Description='team interns':Organization='llm-slurm':QOS='interns'"
        ":DefaultQOS='interns'",
        "Parent - 'research'",
        "User - 'alice':DefaultAccount='research'",
        "User - 'bob':DefaultAccount='research'",
        "Parent - 'applied'",
        "User - 'carol':DefaultAccount='applied'",
        "Parent - 'interns'",
        "User - 'dave':DefaultAccount='interns'",
    ]
    # GrpTRESMins is GPU-minutes: 30,000 GPU-hours x 60. Lowest priority first so that every QOS a line
    # preempts exists before it is named. Every managed attribute is written, interns' empty Preempt too.
    assert [line for line in files["qos.cfg"].splitlines() if not line.startswith("#")] == [
        "interns Description='clusterfab team interns of llm-slurm' Priority=10 GrpTRES=gres/gpu=8 "
        "GrpTRESMins=gres/gpu=60000 Flags=NoDecay Preempt='' PreemptMode=cluster",
        "applied Description='clusterfab team applied of llm-slurm' Priority=100 GrpTRES=gres/gpu=32 "
        "GrpTRESMins=gres/gpu=600000 Flags=NoDecay Preempt=interns PreemptMode=requeue",
        "research Description='clusterfab team research of llm-slurm' Priority=1000 GrpTRES=gres/gpu=64 "
        "GrpTRESMins=gres/gpu=1800000 Flags=NoDecay Preempt=applied,interns PreemptMode=requeue",
    ]


def test_a_demoted_team_loses_its_preemption_and_budget_in_so_many_words() -> None:
    """What a team no longer has is written as Slurm's clearing value (sacctmgr(1), "SPECIFICATIONS FOR
    QOS": `Preempt=''`, `PreemptMode=cluster`, `GrpTRESMins=gres/gpu=-1` for the one TRES, `Flags=-1`):
    a file that only left the old values out would leave them in slurmdbd, where the loader only sets
    what the file names."""
    before = slurm_spec(
        name="lab",
        teams=[
            {"name": "research", "max_gpus": 16, "gpu_hours_per_month": 20000, "priority": "high"},
            {"name": "interns", "max_gpus": 8, "gpu_hours_per_month": 1000, "priority": "low"},
        ],
    )
    after = slurm_spec(
        name="lab",
        teams=[
            {"name": "research", "max_gpus": 4, "priority": "low"},
            {"name": "interns", "max_gpus": 8, "gpu_hours_per_month": 1000, "priority": "low"},
        ],
    )
    assert render_slurm(before, FACTS)["qos.cfg"] == (
        "# NAME attribute=value ...: `sacctmgr add qos NAME`, then `sacctmgr modify qos NAME set ...`\n"
        "# (values quoted as in a shell); lowest priority first, so that every QOS a line preempts exists\n"
        "# before it. Unset attributes are written with the value that clears them.\n"
        "interns Description='clusterfab team interns of lab' Priority=10 GrpTRES=gres/gpu=8 "
        "GrpTRESMins=gres/gpu=60000 Flags=NoDecay Preempt='' PreemptMode=cluster\n"
        "research Description='clusterfab team research of lab' Priority=1000 GrpTRES=gres/gpu=16 "
        "GrpTRESMins=gres/gpu=1200000 Flags=NoDecay Preempt=interns PreemptMode=requeue\n"
    )
    assert render_slurm(after, FACTS)["qos.cfg"].splitlines()[3:] == [
        "research Description='clusterfab team research of lab' Priority=10 GrpTRES=gres/gpu=4 "
        "GrpTRESMins=gres/gpu=-1 Flags=-1 Preempt='' PreemptMode=cluster",
        "interns Description='clusterfab team interns of lab' Priority=10 GrpTRES=gres/gpu=8 "
        "GrpTRESMins=gres/gpu=60000 Flags=NoDecay Preempt='' PreemptMode=cluster",
    ]


def test_the_environment_overlay_changes_the_quotas_and_nodes() -> None:
    files = render_slurm(example_spec("aws-p5-slurm", "dev"), FACTS)
    assert lines_starting(files["slurm.conf"], "NodeName=h100-[0-1] ")
    assert (
        "research Description='clusterfab team research of llm-slurm' Priority=1000 GrpTRES=gres/gpu=16 "
        "GrpTRESMins=gres/gpu=480000 "
    ) in files["qos.cfg"]


def test_default_partitions_are_one_per_node_group_the_first_the_default() -> None:
    cluster = slurm_spec(
        node_groups=[
            {"name": "h100", "machine_type": "p5.48xlarge", "count": 2},
            {"name": "b200", "machine_type": "p6-b200.48xlarge", "count": 1},
        ]
    )
    files = render_slurm(cluster, FACTS)
    assert lines_starting(files["slurm.conf"], "PartitionName=") == [
        "PartitionName=h100 Nodes=h100-[0-1] Default=YES MaxTime=UNLIMITED DefaultTime=01:00:00 State=UP "
        "OverSubscribe=EXCLUSIVE",
        "PartitionName=b200 Nodes=b200-0 Default=NO MaxTime=UNLIMITED DefaultTime=01:00:00 State=UP "
        "OverSubscribe=EXCLUSIVE",
    ]
    assert lines_starting(files["topology.conf"], "SwitchName=") == [
        "SwitchName=h100 Nodes=h100-[0-1]",
        "SwitchName=b200 Nodes=b200-0",
        "SwitchName=root Switches=h100,b200",
    ]
    assert settings(files["slurm.conf"])["AccountingStorageTRES"] == "gres/gpu,gres/gpu:b200,gres/gpu:h100"


def test_without_teams_there_is_no_qos_weight_reset_or_preemption() -> None:
    conf = settings(render_slurm(slurm_spec(), FACTS)["slurm.conf"])
    assert not {"PriorityWeightQOS", "PriorityUsageResetPeriod", "PreemptType"} & set(conf)


def test_teams_of_one_priority_do_not_preempt_each_other() -> None:
    cluster = slurm_spec(teams=[{"name": "a", "max_gpus": 8}, {"name": "b", "max_gpus": 8}])
    files = render_slurm(cluster, FACTS)
    assert "PreemptType" not in settings(files["slurm.conf"])
    # Neither preempts the other: each QOS says so, clearing what an earlier rank may have left.
    assert [line.split()[-2:] for line in files["qos.cfg"].splitlines() if not line.startswith("#")] == [
        ["Preempt=''", "PreemptMode=cluster"],
        ["Preempt=''", "PreemptMode=cluster"],
    ]
    assert "PriorityUsageResetPeriod" not in settings(files["slurm.conf"])  # no monthly budgets


def test_a_shared_partition_charges_small_jobs_only_their_gpus() -> None:
    cluster = slurm_spec(
        scheduler={"partitions": [{"name": "dev", "node_groups": ["h100"], "exclusive": False}]}
    )
    assert lines_starting(render_slurm(cluster, FACTS)["slurm.conf"], "PartitionName=") == [
        "PartitionName=dev Nodes=h100-[0-3] Default=YES MaxTime=UNLIMITED DefaultTime=01:00:00 State=UP "
        "OverSubscribe=NO"
    ]


def test_without_pyxis_there_is_no_plugstack() -> None:
    assert "plugstack.conf" not in render_slurm(slurm_spec(scheduler={"containers": "none"}), FACTS)
    assert "plugstack.conf" not in render_slurm(slurm_spec(), FACTS)  # none is the default
    pyxis = render_slurm(slurm_spec(scheduler={"containers": "pyxis"}), FACTS)
    assert pyxis["plugstack.conf"] == "include /etc/slurm/plugstack.conf.d/*.conf\n"


def test_slurmdbd_keeps_its_credentials_as_placeholders() -> None:
    conf = render_slurm(slurm_spec(), FACTS)["slurmdbd.conf"]
    assert "StorageUser=@SLURMDBD_STORAGE_USER@" in conf.splitlines()
    assert "StoragePass=@SLURMDBD_STORAGE_PASS@" in conf.splitlines()
    assert "StorageHost=localhost" in conf.splitlines()


def test_a_setting_the_target_release_lacks_is_refused() -> None:
    # Configless Slurm came with 20.02; a cluster on 19.05 would stop on SlurmctldParameters.
    with pytest.raises(
        SlurmRenderError, match=r"enable_configless needs Slurm 20.02 or later; the nodes run 19.05"
    ):
        render_slurm(slurm_spec(), FACTS, version="19.05")


def test_the_nodes_release_is_the_catalogs() -> None:
    assert slurm_spec().scheduler is not None
    assert slurm_spec().scheduler.version == FACTS.release.version == "23.11.4"  # type: ignore[union-attr]
    head = render_slurm(slurm_spec(), FACTS)["slurm.conf"].splitlines()[0]
    assert head == "# slurm.conf of cluster test-cluster, rendered by clusterfab for Slurm 23.11.4."


def test_no_scheduler_renders_nothing() -> None:
    with pytest.raises(SlurmRenderError, match="has no Slurm scheduler"):
        render_slurm(spec(node_groups=[{"name": "h100", "machine_type": "p5.48xlarge", "count": 1}]), FACTS)


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "clusterfab", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)


def test_render_slurm_writes_the_files(tmp_path: Path) -> None:
    proc = run("render", "slurm", example("aws-p5-slurm"), "--env", "prod", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    written = ["accounts.cfg", "cgroup.conf", "gres.conf", "plugstack.conf", "qos.cfg", "slurm.conf",
               "slurmdbd.conf", "topology.conf"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == written
    assert proc.stdout.splitlines() == [str(tmp_path / name) for name in written]


def test_render_slurm_without_a_scheduler_exits_1(tmp_path: Path) -> None:
    proc = run("render", "slurm", example("aws-p5-efa-fsx"), "--out", tmp_path)
    assert proc.returncode == 1
    assert "no Slurm scheduler" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_elastic_groups_are_cloud_nodes_behind_the_power_programs() -> None:
    """A group with autoscaling {min, max}: min always-up nodes, excluded from power saving, then max - min
    State=CLOUD nodes that the resume program creates; idle time and resume timeout: the blueprint's."""
    elastic = slurm_spec(
        node_groups=[
            {"name": "h100", "machine_type": "p5.48xlarge", "autoscaling": {"min": 2, "max": 6}},
            {"name": "spot", "machine_type": "p5.48xlarge", "autoscaling": {"min": 0, "max": 4}},
            {"name": "fixed", "machine_type": "p5.48xlarge", "count": 1},
        ],
        scheduler={"elastic": {"idle_minutes": 15, "resume_timeout_minutes": 40}},
    )
    conf = render_slurm(elastic, FACTS)["slurm.conf"]
    hardware = "CPUs=192 RealMemory=1992294 Gres=gpu:h100:8"
    assert lines_starting(conf, "NodeName=") == [
        f"NodeName=h100-[0-1] {hardware} State=UNKNOWN",
        f"NodeName=h100-[2-5] {hardware} State=CLOUD",
        f"NodeName=spot-[0-3] {hardware} State=CLOUD",
        f"NodeName=fixed-0 {hardware} State=UNKNOWN",
    ]
    found = settings(conf)
    assert {key: found[key] for key in found if key in POWER_KEYS} == {
        "ResumeProgram": "/usr/local/sbin/clusterfab-slurm-resume",
        "SuspendProgram": "/usr/local/sbin/clusterfab-slurm-suspend",
        "ResumeFailProgram": "/usr/local/sbin/clusterfab-slurm-resume-fail",
        "SuspendTime": "900",
        "SuspendTimeout": "300",
        "ResumeTimeout": "2400",
        "ResumeRate": "0",
        "SuspendRate": "0",
        "SuspendExcNodes": "h100-[0-1],fixed-0",
        "SlurmctldParameters": "enable_configless,cloud_reg_addrs,idle_on_node_suspend",
        "SchedulerParameters": "nohold_on_prolog_fail,salloc_wait_nodes,sbatch_wait_nodes",
        "CommunicationParameters": "NoAddrCache",
        "TreeWidth": "65533",
        "PrivateData": "cloud",
    }
    # A cluster of fixed-size groups has no power saving at all.
    static = settings(render_slurm(slurm_spec(), FACTS)["slurm.conf"])
    assert not POWER_KEYS & {k for k in static if k not in {"SlurmctldParameters", "SchedulerParameters"}}
    assert static["SlurmctldParameters"] == "enable_configless"


POWER_KEYS = {
    "ResumeProgram",
    "SuspendProgram",
    "ResumeFailProgram",
    "SuspendTime",
    "SuspendTimeout",
    "ResumeTimeout",
    "ResumeRate",
    "SuspendRate",
    "SuspendExcNodes",
    "SlurmctldParameters",
    "SchedulerParameters",
    "CommunicationParameters",
    "TreeWidth",
    "PrivateData",
}


def test_a_flex_start_elastic_groups_partitions_wait_for_capacity() -> None:
    """Flex-start capacity may take hours to arrive: the partitions holding flex-start elastic nodes get
    the blueprint's flex_start_wait_minutes as their ResumeTimeout; the global one stays for the rest."""
    flex = {"kind": "flex_start", "max_run_duration_hours": 24}
    cluster = spec(
        "gcp",
        node_groups=[
            {
                "name": "dws",
                "machine_type": "a3-megagpu-8g",
                "capacity": flex,
                "autoscaling": {"min": 0, "max": 4},
            },
            {"name": "fixed", "machine_type": "a3-megagpu-8g", "capacity": flex, "count": 2},
            {"name": "h100", "machine_type": "a3-megagpu-8g", "autoscaling": {"min": 0, "max": 2}},
        ],
        scheduler={
            "kind": "slurm",
            "elastic": {"flex_start_wait_minutes": 1080},
            "partitions": [
                {"name": "flex", "node_groups": ["dws"]},
                {"name": "mixed", "node_groups": ["h100", "dws"], "default": True},
                {"name": "other", "node_groups": ["fixed", "h100"]},
            ],
        },
    )
    conf = render_slurm(cluster, FACTS)["slurm.conf"]
    assert [line.rsplit(" ", 1)[-1] for line in lines_starting(conf, "PartitionName=")] == [
        "ResumeTimeout=64800",  # 18 hours: Slurm refuses more than 65,535 s
        "ResumeTimeout=64800",
        "OverSubscribe=EXCLUSIVE",  # a fixed flex-start group is the MIG's, not Slurm's to wait for
    ]
    assert settings(conf)["ResumeTimeout"] == "1800"


def test_azure_nodes_are_listed_per_fabric_unit_under_switches_that_no_root_joins() -> None:
    """InfiniBand does not span Azure scale sets: 150 ND H100 v5 nodes are two units of 75, each its own
    leaf switch with no root over them (topology.conf(5): "Jobs can only span nodes connected by the same
    switch fabric"), each unit the feature its VMs claim their nodes by."""
    groups = [{"name": "h100", "machine_type": "Standard_ND96isr_H100_v5", "count": 150}]
    azure = spec(
        "azure",
        node_groups=groups,
        scheduler={"kind": "slurm"},
        region="southcentralus",
        zone="1",
        network={"cidr": "10.20.0.0/16"},
    )
    files = render_slurm(azure, FACTS)
    assert lines_starting(files["slurm.conf"], "NodeName=") == [
        "NodeName=h100-[0-74] CPUs=96 RealMemory=1848320 Gres=gpu:h100:8 Feature=h100-0 State=UNKNOWN",
        "NodeName=h100-[75-149] CPUs=96 RealMemory=1848320 Gres=gpu:h100:8 Feature=h100-1 State=UNKNOWN",
    ]
    assert lines_starting(files["topology.conf"], "SwitchName=") == [
        "SwitchName=h100-0 Nodes=h100-[0-74]",
        "SwitchName=h100-1 Nodes=h100-[75-149]",
    ]
    assert lines_starting(files["gres.conf"], "NodeName=") == [
        "NodeName=h100-[0-149] Name=gpu Type=h100 File=/dev/nvidia[0-7]"
    ]
    assert settings(files["slurm.conf"])["SlurmctldHost"] == "test-cluster-controller(10.20.16.10)"
    assert "ResumeProgram" not in settings(files["slurm.conf"])
