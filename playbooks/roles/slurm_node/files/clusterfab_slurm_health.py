#!/usr/bin/python3
"""clusterfab's GPU health check on a Slurm GPU node: Slurm's Prolog and Epilog, and the per-node part of
`clusterfab health` (the deep check). Standard library only: it runs with the node's own python3.

Run by slurmd as root (prolog.d and epilog.d link to it; SLURM_SCRIPT_CONTEXT says which):

- prolog (before every job): the quick check. nvidia-smi lists the node's GPUs, no GPU has an
  uncorrected ECC error since the driver loaded, no new critical XID in the kernel log, no NVLink error
  counter above the limit, and `dcgmi diag -r 1` passes (when DCGM is installed). NVIDIA's intended use of
  level 1 is exactly this readiness check (DCGM user guide, "DCGM Diagnostics").
- epilog (after every job): the same counters; `dcgmi diag -r 2` (medium, about two minutes) only after a
  job that failed, NVIDIA's "epilogue after a failure". slurmd gives the epilog the job's exit as
  SLURM_JOB_EXIT_CODE2 (`<exit>:<signal>`), Slurm 23.11 and 24.11 alike (SchedMD prolog_epilog.shtml;
  src/plugins/prep/script/prep_script_slurmd.c sets it for the slurmd Epilog).
- report (`--mode report --level N`, run through srun by the controller's deep check): the counters and
  `dcgmi diag -r N`; prints one JSON verdict and never drains (the controller decides).

A failing prolog or epilog drains the node with `clusterfab-health: <CATEGORY>: <detail>` (categories
GPU, XID, ECC, NVLINK, DCGM; the controller's deep check adds PERF), the contract the reconcile loop
replaces nodes by, and exits 1, so Slurm requeues the job elsewhere (nohold_on_prolog_fail). Slurm keeps
the first reason of a drained node, so its own "Prolog error" never replaces ours.

Never hang (ParallelCluster's "Prolog hung" with a long DCGM diagnostic, aws-parallelcluster#6777): every
command has its own timeout and the whole run a budget; a command past its time is killed with its
process group, and one stuck in the kernel (a GPU that fell off the bus leaves nvidia-smi in D state,
where SIGKILL waits) is abandoned, not waited for: the check drains the node and returns.

A job may skip the prolog check with `--extra=healthchecks_prolog=off` (Cluster Toolkit's gpu-test
convention, read from SLURM_JOB_EXTRA) and the epilog check with `healthchecks_epilog=off`; the deep
check's own jobs do, since they run the same checks themselves.

XIDs: the kernel log (/dev/kmsg) numbers its records; the check remembers, per boot, the last record it
read (a state file), so an XID is acted on once: after an operator resumes a node that was drained for
an XID, the old XID does not drain it again, a new one does. Settings: /etc/default/clusterfab-slurm-health.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA_VERSION = 1
REASON_PREFIX = "clusterfab-health: "
CATEGORIES = ("GPU", "XID", "ECC", "NVLINK", "DCGM", "PERF")
MAX_REASON = 200
"""slurmdbd stores a node's reason in a `tinytext` column (255 bytes; accounting_storage_mysql.c)."""
_REASON_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;_/()#+%<>=-]+")
CONFIG = "/etc/default/clusterfab-slurm-health"
DEFAULTS = {
    "CLUSTERFAB_HEALTH_GPUS": "8",
    # Seconds one nvidia-smi (or scontrol) call may take.
    "CLUSTERFAB_HEALTH_TIMEOUT": "20",
    # Seconds `dcgmi diag -r 1`, `-r 2`, `-r 3` may take: NVIDIA gives "seconds", "about 2 minutes" and
    # "about 15 minutes" (dcgmi-diag reference); the bounds leave room on a slow start of the host engine.
    "CLUSTERFAB_HEALTH_DCGM_TIMEOUTS": "60,300,1800",
    # Seconds a whole prolog / epilog check may take; the epilog's includes the medium diagnostic.
    "CLUSTERFAB_HEALTH_PROLOG_BUDGET": "150",
    "CLUSTERFAB_HEALTH_EPILOG_BUDGET": "420",
    "CLUSTERFAB_HEALTH_NVLINK_MAX_ERRORS": "0",
    # XIDs that drain: NVIDIA's Xid catalog puts these in a resolution bucket beyond restarting the
    # application (reset the GPU, reboot, or contact support): 46 and 48 (NVIDIA health-validation: drain),
    # 61/62 micro-controller halt, 64 row-remap failure, 74 NVLink, 79 fallen off the bus, 92 high
    # single-bit ECC rate, 95 uncontained ECC, 119/120 GSP, 140 unrecovered ECC, 154 recovery action.
    # Application XIDs (13, 31, 43, 45, ...) follow a buggy job and never drain a node.
    "CLUSTERFAB_HEALTH_XIDS": "46,48,61,62,64,74,79,92,95,119,120,140,154",
    "CLUSTERFAB_HEALTH_KMSG": "/dev/kmsg",
    "CLUSTERFAB_HEALTH_STATE_DIR": "/var/lib/clusterfab-slurm-health",
    "CLUSTERFAB_HEALTH_LOG": "/var/log/slurm/clusterfab-health.log",
}
_KILL_WAIT = 5.0
"""Seconds to wait for a killed command to go away before abandoning it."""


# ----------------------------------------------------------------------------------------------- model
@dataclass(frozen=True)
class Failure:
    category: str
    detail: str

    @property
    def reason(self) -> str:
        return drain_reason(self.category, self.detail)


def drain_reason(category: str, detail: str) -> str:
    """`clusterfab-health: CATEGORY: detail`, short and safe to pass as `scontrol update Reason=`."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown health category {category!r}")
    text = " ".join(_REASON_UNSAFE.sub(" ", detail).split())
    return f"{REASON_PREFIX}{category}: {text}"[:MAX_REASON].rstrip()


@dataclass(frozen=True)
class Ran:
    """What a command did: returncode None when it ran past its time and was killed (or abandoned)."""

    returncode: int | None
    stdout: str
    stderr: str
    timeout: float

    @property
    def first_error(self) -> str:
        lines = [line.strip() for line in (self.stderr or self.stdout).splitlines() if line.strip()]
        return lines[0][:80] if lines else ""


@dataclass
class Budget:
    """The whole check's deadline; each command gets the smaller of its own timeout and what is left."""

    seconds: float
    started: float = field(default_factory=time.monotonic)

    def left(self, wanted: float) -> float:
        return max(0.0, min(wanted, self.seconds - (time.monotonic() - self.started)))


def run(argv: Sequence[str], timeout: float, env: Mapping[str, str] | None = None) -> Ran:
    """Run a command; never wait for it past `timeout` (+ a few seconds to reap a killed one)."""
    if timeout <= 0:
        return Ran(None, "", "no time left in the check's budget", timeout)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as err:
        return Ran(127, "", f"{argv[0]}: {err.strerror}", timeout)
    try:
        out, err_text = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err_text = proc.communicate(timeout=_KILL_WAIT)
        except subprocess.TimeoutExpired:
            # Stuck in the kernel: SIGKILL is pending until it leaves. Leave it there.
            out, err_text = "", ""
        return Ran(None, out or "", err_text or "", timeout)
    return Ran(proc.returncode, out, err_text, timeout)


# ---------------------------------------------------------------------------------------------- config
def load_config(path: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Defaults, then the settings file (`KEY=value` lines), then the environment."""
    config = dict(DEFAULTS)
    with contextlib.suppress(OSError), open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            key, value = line.split("=", 1)
            config[key.strip()] = value.strip().strip("'\"")
    config.update({k: v for k, v in environ.items() if k.startswith("CLUSTERFAB_HEALTH_")})
    return config


# ------------------------------------------------------------------------------------------ nvidia-smi
@dataclass(frozen=True)
class Gpu:
    index: int
    bus_id: str
    uncorrected_ecc: int | None
    """None: ECC is off or not reported (`[N/A]`)."""


GPU_QUERY = "index,pci.bus_id,ecc.errors.uncorrected.volatile.total"
"""`nvidia-smi --help-query-gpu` field names; Cluster Toolkit's gpu-test reads the same ECC counter."""


def short_bus_id(bus_id: str) -> str:
    """`00000000:53:00.0` (nvidia-smi) and `0000:53:00` (the kernel's XID line) as `0000:53:00.0`."""
    value = bus_id.strip().lower()
    domain, _, rest = value.partition(":")
    if len(domain) == 8 and domain.startswith("0000"):
        domain = domain[4:]
    if rest and "." not in rest:
        rest += ".0"
    return f"{domain}:{rest}" if rest else value


def parse_gpus(text: str) -> list[Gpu]:
    """`nvidia-smi --query-gpu=<GPU_QUERY> --format=csv,noheader,nounits` rows."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != 3 or not fields[0].isdigit():
            raise ValueError(f"unexpected nvidia-smi line {line.strip()!r}")
        ecc = int(fields[2]) if fields[2].isdigit() else None
        gpus.append(Gpu(int(fields[0]), short_bus_id(fields[1]), ecc))
    return gpus


def check_gpus(config: Mapping[str, str], budget: Budget) -> tuple[list[Failure], list[Gpu]]:
    timeout = budget.left(float(config["CLUSTERFAB_HEALTH_TIMEOUT"]))
    ran = run(["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], timeout)
    if ran.returncode is None:
        return [Failure("GPU", f"nvidia-smi timed out after {ran.timeout:g}s")], []
    if ran.returncode != 0:
        return [Failure("GPU", f"nvidia-smi failed (exit {ran.returncode}): {ran.first_error}")], []
    try:
        gpus = parse_gpus(ran.stdout)
    except ValueError as err:
        return [Failure("GPU", str(err))], []
    expected = int(config["CLUSTERFAB_HEALTH_GPUS"])
    failures = []
    if len(gpus) != expected:
        failures.append(Failure("GPU", f"expected {expected} GPUs, nvidia-smi lists {len(gpus)}"))
    failures += [
        Failure("ECC", f"{gpu.uncorrected_ecc} uncorrected ECC errors on GPU {gpu.bus_id}")
        for gpu in gpus
        if gpu.uncorrected_ecc
    ]
    return failures, gpus


_NVLINK_GPU = re.compile(r"^GPU (\d+):")
_NVLINK_COUNTER = re.compile(r"^\s*Link (\d+): ([A-Za-z][A-Za-z0-9 ._-]*?): (\d+)\s*$")


def parse_nvlink_errors(text: str) -> list[tuple[int, int, str, int]]:
    """`nvidia-smi nvlink -e`: (gpu index, link, counter, value) for each error counter.

    Format: a `GPU <i>: <name> (UUID: ...)` line, then `Link <n>: <Counter> Errors: <count>` lines
    (stas00/ml-engineering compute/accelerator/nvidia/debug.md shows an H100's). Only counters named
    "... Errors" count; throughput counters on newer drivers do not.
    """
    found = []
    gpu = -1
    for line in text.splitlines():
        if header := _NVLINK_GPU.match(line):
            gpu = int(header.group(1))
        elif (counter := _NVLINK_COUNTER.match(line)) and counter.group(2).lower().endswith("errors"):
            found.append((gpu, int(counter.group(1)), counter.group(2), int(counter.group(3))))
    return found


def check_nvlink(config: Mapping[str, str], budget: Budget, gpus: Sequence[Gpu]) -> list[Failure]:
    ran = run(["nvidia-smi", "nvlink", "-e"], budget.left(float(config["CLUSTERFAB_HEALTH_TIMEOUT"])))
    if ran.returncode is None:
        return [Failure("GPU", f"nvidia-smi nvlink timed out after {ran.timeout:g}s")]
    if ran.returncode != 0:
        return []  # no NVLink on this GPU (PCIe cards): nothing to count
    limit = int(config["CLUSTERFAB_HEALTH_NVLINK_MAX_ERRORS"])
    bus = {gpu.index: gpu.bus_id for gpu in gpus}
    for index, link, counter, value in parse_nvlink_errors(ran.stdout):
        if value > limit:
            where = bus.get(index, str(index))
            return [Failure("NVLINK", f"{counter} {value} on GPU {where} link {link}")]
    return []


# ------------------------------------------------------------------------------------------------ XIDs
# `NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: ...` (ml-engineering debug.md); under MIG the
# parenthesis also names the instance: `(PCI:0000:01:00 GPU-I:05): 94, ...` (NVIDIA A100 memory error
# management, "User Visible Statistics").
_BUS = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?"
_XID = re.compile(rf"NVRM: Xid \(PCI:({_BUS})[^)]*\): (\d+)")


@dataclass(frozen=True)
class Xid:
    seq: int
    xid: int
    bus_id: str


def kmsg_records(path: str) -> Iterator[tuple[int, str]]:
    """(sequence number, message) of each kernel log record, oldest first.

    /dev/kmsg gives one record per read() as `<prio>,<seq>,<usec>,<flags>;<message>` (continuation lines
    start with a space); a non-blocking read ends with EAGAIN, and EPIPE means records were overwritten
    while reading (Linux Documentation/ABI/testing/dev-kmsg). A regular file of such records (tests)
    reads the same way.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        if stat.S_ISCHR(os.fstat(fd).st_mode):
            chunks = []
            while True:
                try:
                    chunk = os.read(fd, 8192)
                except OSError as err:
                    if err.errno == errno.EPIPE:
                        continue
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            text = b"".join(chunks).decode(errors="replace")
        else:
            with os.fdopen(os.dup(fd), encoding="utf-8", errors="replace") as handle:
                text = handle.read()
    finally:
        os.close(fd)
    for line in text.splitlines():
        prefix, sep, message = line.partition(";")
        fields = prefix.split(",")
        if sep and len(fields) >= 3 and fields[1].isdigit():
            yield int(fields[1]), message


def find_xids(records: Iterator[tuple[int, str]], after: int) -> tuple[list[Xid], int]:
    """XIDs in records numbered above `after`, and the highest record number read."""
    xids = []
    last = after
    for seq, message in records:
        last = max(last, seq)
        if seq > after and (match := _XID.search(message)):
            xids.append(Xid(seq, int(match.group(2)), short_bus_id(match.group(1))))
    return xids, last


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def check_xids(config: Mapping[str, str], node: str) -> list[Failure]:
    """New critical XIDs since the last check of this boot; remembers what it read, under a lock."""
    state_dir = config["CLUSTERFAB_HEALTH_STATE_DIR"]
    os.makedirs(state_dir, exist_ok=True)
    # One file per node name: in the lab several slurmds share one file system.
    path = os.path.join(state_dir, f"xid-{node}.json")
    boot = _boot_id()
    drain_on = {int(x) for x in config["CLUSTERFAB_HEALTH_XIDS"].split(",") if x.strip()}
    with open(path + ".lock", "a", encoding="utf-8") as lock:
        deadline = time.monotonic() + 10
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return []  # another check holds it: that one reads the XIDs
                time.sleep(0.1)
        state: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError), open(path, encoding="utf-8") as handle:
            state = json.load(handle)
        after = int(state.get("seq", -1)) if state.get("boot_id") == boot else -1
        xids, last = find_xids(kmsg_records(config["CLUSTERFAB_HEALTH_KMSG"]), after)
        temporary = path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump({"boot_id": boot, "seq": last}, handle)
        os.replace(temporary, path)
    return [Failure("XID", f"{x.xid} on GPU {x.bus_id}") for x in xids if x.xid in drain_on]


# ------------------------------------------------------------------------------------------------ DCGM
def parse_dcgm(text: str, level: int) -> list[Failure]:
    """Failures in `dcgmi diag -r N -j` output (DCGM 4.x).

    Shape (DCGM dcgmi/Diag.cpp HelperJsonBuildOutput, nvvs/include/NvvsJsonStrings.h, and
    testing/python3/dcgm_diag_schema.json): {"DCGM Diagnostic": {"test_categories": [{"category",
    "tests": [{"name", "results": [{"entity_group", "entity_id", "status", "warnings": [{"warning",
    "error_id", ...}]}], "test_summary": {"status", "warnings"}}]}], "runtime_error"?}}; a status is Pass,
    Skip, Warn, Fail or Not Run. A diagnostic that could not run prints only "runtime_error".
    """
    start = text.find("{")
    try:
        data = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        data = None
    diag = data.get("DCGM Diagnostic") if isinstance(data, dict) else None
    if not isinstance(diag, dict):
        return [Failure("DCGM", f"level {level}: no diagnostic in dcgmi's output")]
    if diag.get("runtime_error"):
        return [Failure("DCGM", f"level {level} could not run: {str(diag['runtime_error']).strip()}")]
    failures = []
    for category in diag.get("test_categories", []):
        for test in category.get("tests", []):
            name = test.get("name", "?")
            failed = [r for r in test.get("results", []) if r.get("status") == "Fail"]
            for result in failed:
                warning = _first_warning(result)
                failures.append(
                    Failure("DCGM", f"level {level} {name} failed on GPU {result.get('entity_id')}{warning}")
                )
            summary = test.get("test_summary", {})
            if not failed and summary.get("status") == "Fail":
                failures.append(Failure("DCGM", f"level {level} {name} failed{_first_warning(summary)}"))
    return failures


def _first_warning(entry: Mapping[str, Any]) -> str:
    warnings = entry.get("warnings") or []
    return f": {warnings[0].get('warning', '')}" if warnings else ""


def check_dcgm(config: Mapping[str, str], budget: Budget, level: int) -> list[Failure]:
    if shutil.which("dcgmi") is None:
        return []  # DCGM is not installed on this node (the dcgm role installs it on GPU nodes)
    timeouts = [float(t) for t in config["CLUSTERFAB_HEALTH_DCGM_TIMEOUTS"].split(",")]
    timeout = budget.left(timeouts[min(level, len(timeouts)) - 1])
    # All the node's GPUs, whatever the job was given (Cluster Toolkit's gpu-test does the same).
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    ran = run(["dcgmi", "diag", "-r", str(level), "-j"], timeout, env=env)
    if ran.returncode is None:
        return [Failure("DCGM", f"dcgmi diag -r {level} timed out after {ran.timeout:g}s")]
    failures = parse_dcgm(ran.stdout, level)
    if ran.returncode != 0 and not failures:
        failures = [Failure("DCGM", f"dcgmi diag -r {level} exited {ran.returncode}: {ran.first_error}")]
    return failures


# ----------------------------------------------------------------------------------------------- flow
def run_checks(config: Mapping[str, str], node: str, budget: Budget, dcgm_level: int | None) -> list[Failure]:
    """The counters, then DCGM: the cheap checks first, and none after the GPUs stopped answering."""
    failures, gpus = check_gpus(config, budget)
    if any(f.category == "GPU" and "timed out" in f.detail for f in failures):
        return failures
    failures += check_xids(config, node)
    failures += check_nvlink(config, budget, gpus)
    if dcgm_level is not None and not any(f.category == "GPU" for f in failures):
        failures += check_dcgm(config, budget, dcgm_level)
    return failures


def job_failed(environ: Mapping[str, str]) -> bool:
    """Whether the job ended badly: a non-zero exit, or a signal other than the ones `scancel`, a time
    limit and preemption send (SIGTERM, SIGKILL), which say nothing about the GPUs."""
    exit_code, _, sig = environ.get("SLURM_JOB_EXIT_CODE2", "0:0").partition(":")
    try:
        return int(exit_code) != 0 or int(sig or 0) not in (0, signal.SIGTERM, signal.SIGKILL)
    except ValueError:
        return False


def skipped(environ: Mapping[str, str], mode: str) -> bool:
    return f"healthchecks_{mode}=off" in environ.get("SLURM_JOB_EXTRA", "")


def drain(config: Mapping[str, str], node: str, reason: str) -> None:
    timeout = float(config["CLUSTERFAB_HEALTH_TIMEOUT"])
    run(["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"], timeout)


def log(config: Mapping[str, str], line: str) -> None:
    print(line, file=sys.stderr)
    with contextlib.suppress(OSError), open(config["CLUSTERFAB_HEALTH_LOG"], "a", encoding="utf-8") as handle:
        handle.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {line}\n")


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(description="clusterfab's GPU health check (Slurm prolog/epilog).")
    parser.add_argument("--mode", choices=("prolog", "epilog", "report"))
    parser.add_argument("--level", type=int, choices=(1, 2, 3), default=1, help="DCGM level (report).")
    args = parser.parse_args(argv)
    context = env.get("SLURM_SCRIPT_CONTEXT", "")
    mode = args.mode or ("epilog" if context.startswith("epilog") else "prolog")
    config = load_config(env.get("CLUSTERFAB_HEALTH_CONFIG", CONFIG), env)
    node = env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    job = env.get("SLURM_JOB_ID", "-")
    if mode != "report" and skipped(env, mode):
        log(config, f"{node} job {job} {mode}: skipped (healthchecks_{mode}=off)")
        return 0
    if mode == "prolog":
        level: int | None = 1
        budget = Budget(float(config["CLUSTERFAB_HEALTH_PROLOG_BUDGET"]))
    elif mode == "epilog":
        level = 2 if job_failed(env) else None
        budget = Budget(float(config["CLUSTERFAB_HEALTH_EPILOG_BUDGET"]))
    else:
        level = args.level
        budget = Budget(float(config["CLUSTERFAB_HEALTH_DCGM_TIMEOUTS"].split(",")[-1]) + 120)
    failures = run_checks(config, node, budget, level)
    seconds = round(time.monotonic() - budget.started, 1)
    if mode == "report":
        verdict = {
            "schema_version": SCHEMA_VERSION,
            "node": node,
            "level": level,
            "healthy": not failures,
            "failures": [{**asdict(f), "reason": f.reason} for f in failures],
            "seconds": seconds,
        }
        print(json.dumps(verdict, sort_keys=True))
        return 0
    label = f"{node} job {job} {mode} (dcgm level {level or '-'}, {seconds}s)"
    if not failures:
        log(config, f"{label}: healthy")
        return 0
    for failure in failures:
        log(config, f"{label}: {failure.reason}")
    drain(config, node, failures[0].reason)
    return 1


if __name__ == "__main__":
    sys.exit(main())
