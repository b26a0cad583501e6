#!/usr/bin/python3
"""clusterfab-slurm-accounts: make slurmdbd's teams what the rendered files say, for cluster CLUSTER.

Usage: clusterfab-slurm-accounts CLUSTER QOS_CFG ACCOUNTS_CFG

QOS_CFG has one line per team QOS, ``NAME attribute=value ...`` (values quoted as in a shell; every
attribute clusterfab manages is written, an unset one with Slurm's clearing value, such as
``Preempt=''``); ACCOUNTS_CFG is the teams' accounts and users in ``sacctmgr load`` format. Once
slurmdbd answers and slurmctld has registered the GPU TRES (QOS limits on gres/gpu need it), the program

1. adds each QOS that is missing and sets every attribute of each line (``sacctmgr modify qos``);
2. adds each account and user association that is missing, and sets each account's description,
   organization and QOS and each user's default account (``sacctmgr load`` only adds: it does not take
   a membership or a QOS away, and it stops at the first association it cannot change);
3. removes what clusterfab made and the files no longer name: a user's association with a team they
   left (a user left with no association at all is removed from Slurm by slurmdbd itself), then a team's
   account, then its QOS.

Only what clusterfab made is removed. A clusterfab account is a child of root whose Organization is the
cluster's name and whose Description is ``team NAME`` (what accounts.cfg has always written); a
clusterfab QOS has the description ``clusterfab team NAME of CLUSTER`` (qos.cfg writes it), or, for a
QOS made before QOS carried it, keeps Slurm's default description (its name) and is named after a
clusterfab account. Hand-made accounts and QOS, ``root`` and ``normal`` never match.

Slurm refuses to remove an association that has jobs. Such an association is shut instead: it takes no
new job (MaxSubmitJobs=0) and starts none (MaxJobs=0), its pending jobs are cancelled, and its running
jobs run to their end; the program reports it on stderr and removes it at a later run (the
clusterfab-slurm-accounts timer runs it again), never failing for it. An association the files name
again is opened again.

Prints ``changed`` when it added, changed or removed anything, ``unchanged`` otherwise.
"""

from __future__ import annotations

import fcntl
import json
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

USAGE = "usage: clusterfab-slurm-accounts CLUSTER QOS_CFG ACCOUNTS_CFG"
LOCK = "/run/clusterfab-slurm-accounts.lock"
"""One run at a time: the role's run and the timer's may meet."""
WAIT_S = 300
"""How long to wait for slurmdbd, and for slurmctld to register gres/gpu."""
QOS_DESCRIPTION = "clusterfab team {team} of {cluster}"
"""The description that marks a QOS as clusterfab's (clusterfab.scheduler.slurm.render writes it)."""
ACCOUNT_DESCRIPTION = "team {team}"
"""With Organization=CLUSTER and parent root: the marks of a clusterfab account (accounts.cfg)."""
ENTITY_FIELDS = {"description", "organization"}
"""Fields of an account itself; the others in accounts.cfg (QOS, DefaultQOS) are its association's."""
JOBS_ACTIVE = "Job(s) active"
"""slurmdbd's answer when an association to remove still has jobs."""
CANCEL_WAIT_S = 10
"""How long to wait for slurmdbd to see cancelled pending jobs end before trying again."""

Run = Callable[[Sequence[str]], subprocess.CompletedProcess[str]]


def run_command(argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(argv), capture_output=True, text=True, check=False, timeout=120)


class SlurmError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------- the files
@dataclass(frozen=True)
class Account:
    name: str
    parent: str
    settings: dict[str, str]
    """Description, Organization, QOS, DefaultQOS as accounts.cfg gives them."""


@dataclass
class Desired:
    qos: list[tuple[str, list[str]]] = field(default_factory=list)
    """Each QOS line: the name and its attribute=value words, in file order."""
    accounts: dict[str, Account] = field(default_factory=dict)
    members: list[tuple[str, str]] = field(default_factory=list)
    """(user, account) associations, in file order."""
    defaults: dict[str, str] = field(default_factory=dict)
    """Each user's default account."""


def parse_qos(text: str) -> list[tuple[str, list[str]]]:
    """qos.cfg's lines as (name, attribute words); shell quoting only, nothing is evaluated."""
    lines = []
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if words:
            lines.append((words[0], words[1:]))
    return lines


def _fields(spec: str) -> list[str]:
    """``'alice':DefaultAccount='research'`` -> [alice, DefaultAccount=research] (colons outside quotes)."""
    lexer = shlex.shlex(spec, posix=True)
    lexer.whitespace = ":"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def parse_accounts(text: str) -> tuple[str, Desired]:
    """accounts.cfg (the subset of ``sacctmgr load`` format clusterfab writes): the cluster's name and
    the accounts, memberships and default accounts it asks for."""
    desired = Desired()
    cluster, parent = "", "root"
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        title, sep, spec = line.partition(" - ")
        if not sep:
            raise SlurmError(f"accounts file line {number}: expected 'Title - name', got {raw!r}")
        name, *pairs = _fields(spec)
        settings = dict(pair.split("=", 1) for pair in pairs)
        match title.strip():
            case "Cluster":
                cluster = name
            case "Parent":
                parent = name
            case "Account":
                desired.accounts[name] = Account(name, parent, settings)
            case "User":
                desired.members.append((name, parent))
                desired.defaults.setdefault(name, settings.get("DefaultAccount", parent))
            case other:
                raise SlurmError(f"accounts file line {number}: unknown title {other!r}")
    return cluster, desired


# ---------------------------------------------------------------------------------------- slurmdbd
@dataclass(frozen=True)
class Association:
    id: str
    account: str
    user: str
    parent: str
    max_submit: str


class Slurm:
    """sacctmgr, squeue and scancel for one cluster."""

    def __init__(self, cluster: str, run: Run = run_command) -> None:
        self.cluster = cluster
        self._run = run

    def call(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self._run(argv)

    def check(self, *argv: str) -> str:
        done = self.call(*argv)
        if done.returncode != 0:
            raise SlurmError(
                f"{shlex.join(argv)} exited {done.returncode}: {(done.stderr or done.stdout).strip()}"
            )
        return done.stdout

    def rows(self, *query: str) -> list[list[str]]:
        """``sacctmgr -n -P show QUERY`` as rows of fields."""
        out = self.check("sacctmgr", "-n", "-P", "show", *query)
        return [line.split("|") for line in out.splitlines() if line]

    def change(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return self.call("sacctmgr", "-i", *argv)

    def must_change(self, *argv: str) -> None:
        self.check("sacctmgr", "-i", *argv)

    def associations(self) -> list[Association]:
        rows = self.rows(
            "assoc", "where", f"cluster={self.cluster}", "format=id,account,user,parentname,maxsubmit"
        )
        return [Association(*row) for row in rows]

    def state(self) -> list[list[str]]:
        """Everything the program manages, to tell whether a run changed anything."""
        return [
            *self.rows(
                "qos", "format=name,description,priority,grptres,grptresmins,flags,preempt,preemptmode"
            ),
            *self.rows(
                "assoc",
                "where",
                f"cluster={self.cluster}",
                "format=account,user,parentname,qos,defaultqos,maxsubmit,maxjobs",
            ),
            *self.rows("account", "format=account,description,organization"),
            *self.rows("user", "where", f"cluster={self.cluster}", "format=user,defaultaccount"),
        ]

    def jobs(self, association: str) -> tuple[list[str], int]:
        """The association's pending job ids and how many of its jobs are past pending. By association
        id: a user whose Linux account is gone has no name for squeue or scancel to look up."""
        try:
            data = json.loads(self.check("squeue", "--json"))
        except ValueError as error:
            raise SlurmError(f"squeue --json printed no JSON: {error}") from error
        pending, other = [], 0
        for job in data.get("jobs", []):
            if str(job.get("association_id")) != association:
                continue
            state = job.get("job_state", [])  # a list since Slurm 23.11's data_parser v0.0.40
            if "PENDING" in (state if isinstance(state, list) else [state]):
                pending.append(str(job["job_id"]))
            else:
                other += 1
        return pending, other


def wait_for(what: str, ready: Callable[[], bool], timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise SlurmError(f"gave up waiting for {what}")
        time.sleep(2)


# ---------------------------------------------------------------------------------------- the sync
class Sync:
    def __init__(self, slurm: Slurm, desired: Desired) -> None:
        self.slurm = slurm
        self.cluster = slurm.cluster
        self.desired = desired
        self.kept: list[str] = []
        """What could not be removed yet, one line each."""

    # -- adds and changes
    def apply_qos(self) -> None:
        existing = {row[0] for row in self.slurm.rows("qos", "format=name")}
        for name, _ in self.desired.qos:
            if name not in existing:
                self.slurm.must_change("add", "qos", name)
        for name, attributes in self.desired.qos:
            if attributes:
                self.slurm.must_change("modify", "qos", name, "set", *attributes)

    def apply_accounts(self) -> None:
        present = {a.account for a in self.slurm.associations() if not a.user}
        for spec in self.desired.accounts.values():
            self._apply_account(spec, spec.name in present)
        members = {(a.user, a.account): a for a in self.slurm.associations() if a.user}
        cluster = f"cluster={self.cluster}"
        for user, account in self.desired.members:
            found = members.get((user, account))
            if found is None:
                self.slurm.must_change("add", "user", user, f"account={account}", cluster)
            elif found.max_submit == "0":
                # Shut by an earlier run while the user was leaving; the files name it again.
                self._limit(user, account, "-1")
        for user, account in self.desired.defaults.items():
            self._set_default(user, account)

    def _apply_account(self, spec: Account, present: bool) -> None:
        cluster = f"cluster={self.cluster}"
        settings = [f"{key}={value}" for key, value in spec.settings.items()]
        if not present:
            self.slurm.must_change("add", "account", spec.name, cluster, f"parent={spec.parent}", *settings)
            return
        # The account's own fields, then those of its association with this cluster.
        entity = [s for s in settings if s.split("=", 1)[0].lower() in ENTITY_FIELDS]
        association = [s for s in settings if s.split("=", 1)[0].lower() not in ENTITY_FIELDS]
        where = ("modify", "account", "where", f"name={spec.name}")
        if entity:
            self.slurm.must_change(*where, "set", *entity)
        if association:
            self.slurm.must_change(*where, cluster, "set", *association)

    # -- removals
    def managed_accounts(self, associations: list[Association]) -> set[str]:
        entities = {
            row[0]: row[1:] for row in self.slurm.rows("account", "format=account,description,organization")
        }
        managed = set()
        for association in associations:
            name = association.account
            if association.user or association.parent != "root" or name not in entities:
                continue
            description, organization = entities[name]
            if (
                description == ACCOUNT_DESCRIPTION.format(team=name)
                and organization.lower() == self.cluster.lower()
            ):
                managed.add(name)
        return managed

    def managed_qos(self, accounts: set[str]) -> set[str]:
        managed = set()
        for name, description in self.slurm.rows("qos", "format=name,description"):
            if description == QOS_DESCRIPTION.format(team=name, cluster=self.cluster) or (
                description == name and name in accounts
            ):
                managed.add(name)
        return managed

    def remove_departed(self) -> None:
        associations = self.slurm.associations()
        accounts = self.managed_accounts(associations)
        qos = self.managed_qos(accounts)
        wanted = set(self.desired.members)
        leaving = [
            a for a in associations if a.user and a.account in accounts and (a.user, a.account) not in wanted
        ]
        blocked: set[str] = set()
        for association in leaving:
            if not self._remove_member(association, associations, leaving):
                blocked.add(association.account)
        gone: set[str] = set()
        for account in sorted(accounts - set(self.desired.accounts)):
            if account in blocked:
                self.kept.append(f"kept account {account}: its users' jobs have not ended")
                continue
            children = sorted(a.account for a in associations if not a.user and a.parent == account)
            if children:
                # Sub-accounts are made by hand (clusterfab makes none): removing the account would
                # remove them with it.
                self.kept.append(f"kept account {account}: it has sub-accounts {','.join(children)}")
                continue
            done = self.slurm.change("delete", "account", f"name={account}", f"cluster={self.cluster}")
            if done.returncode != 0:
                self.kept.append(f"kept account {account}: {_message(done)}")
                continue
            gone.add(account)
            if not self.slurm.rows("assoc", "where", f"account={account}", "format=account"):
                # The account's last association went: the account itself goes too.
                self.slurm.change("delete", "account", f"name={account}")
        wanted_qos = {name for name, _ in self.desired.qos}
        for name in sorted(qos - wanted_qos - (accounts - gone)):
            done = self.slurm.change("delete", "qos", name)
            if done.returncode != 0:
                self.kept.append(f"kept QOS {name}: {_message(done)}")

    def _remove_member(
        self, association: Association, associations: list[Association], leaving: list[Association]
    ) -> bool:
        """Remove one user's association with one account; False when it has jobs and stays, shut."""
        user, account = association.user, association.account
        self._move_default(user, account, associations, leaving)
        done = self._delete_member(user, account)
        if done.returncode == 0:
            return True
        if JOBS_ACTIVE not in done.stdout + done.stderr:
            self.kept.append(f"kept {user} in {account}: {_message(done)}")
            return False
        self._limit(user, account, "0")
        try:
            pending, running = self.slurm.jobs(association.id)
        except SlurmError as error:
            self.kept.append(f"kept {user} in {account}, shut: its jobs could not be listed: {error}")
            return False
        if pending:
            # A job that ended meanwhile is no error: the retry below sees what is left.
            self.slurm.call("scancel", *pending)
        if running == 0:
            deadline = time.monotonic() + CANCEL_WAIT_S
            while True:
                done = self._delete_member(user, account)
                if done.returncode == 0:
                    return True
                if time.monotonic() > deadline:
                    break
                time.sleep(1)
        cancelled = f", cancelled pending job(s) {','.join(pending)}" if pending else ""
        self.kept.append(
            f"kept {user} in {account} until its jobs end ({running} running{cancelled}): it takes and "
            "starts no new job"
        )
        return False

    def _delete_member(self, user: str, account: str) -> subprocess.CompletedProcess[str]:
        return self.slurm.change(
            "delete", "user", f"name={user}", f"account={account}", f"cluster={self.cluster}"
        )

    def _move_default(
        self, user: str, account: str, associations: list[Association], leaving: list[Association]
    ) -> None:
        """slurmdbd refuses to remove a user's default account while they keep another association:
        move the default to one that stays (the files' choice first)."""
        defaults = dict(
            self.slurm.rows("user", "where", f"cluster={self.cluster}", "format=user,defaultaccount")
        )
        if defaults.get(user) != account:
            return
        going = {(a.user, a.account) for a in leaving}
        staying = sorted(a.account for a in associations if a.user == user and (user, a.account) not in going)
        if not staying:
            return  # its last association: slurmdbd removes the user with it
        target = self.desired.defaults.get(user)
        self._set_default(user, target if target in staying else staying[0])

    def _set_default(self, user: str, account: str) -> None:
        self.slurm.must_change(
            "modify",
            "user",
            "where",
            f"name={user}",
            f"cluster={self.cluster}",
            "set",
            f"DefaultAccount={account}",
        )

    def _limit(self, user: str, account: str, value: str) -> None:
        """Shut (0) or open (-1) a user's association: new submissions and job starts."""
        self.slurm.must_change(
            "modify", "user", "where", f"name={user}", f"account={account}", f"cluster={self.cluster}",
            "set", f"MaxSubmitJobs={value}", f"MaxJobs={value}",
        )  # fmt: skip


def _message(done: subprocess.CompletedProcess[str]) -> str:
    return " ".join((done.stdout + " " + done.stderr).split())


def sync(cluster: str, qos_cfg: Path, accounts_cfg: Path, run: Run = run_command) -> tuple[bool, list[str]]:
    """Make slurmdbd match the files; whether anything changed, and what was kept for a later run."""
    file_cluster, desired = parse_accounts(accounts_cfg.read_text())
    if file_cluster and file_cluster != cluster:
        raise SlurmError(f"{accounts_cfg} is for cluster {file_cluster}, not {cluster}")
    desired.qos = parse_qos(qos_cfg.read_text())
    slurm = Slurm(cluster, run)
    wait_for("slurmdbd", lambda: slurm.call("sacctmgr", "-n", "show", "cluster").returncode == 0)
    if not slurm.rows("cluster", cluster, "format=cluster"):
        slurm.must_change("add", "cluster", cluster)
    wait_for(
        "slurmctld to register gres/gpu",
        lambda: ["gres", "gpu"] in slurm.rows("tres", "format=type,name"),
    )
    before = slurm.state()
    job = Sync(slurm, desired)
    job.apply_qos()
    job.apply_accounts()
    job.remove_departed()
    return before != slurm.state(), job.kept


def main(argv: Sequence[str]) -> int:
    if len(argv) != 3:
        print(USAGE, file=sys.stderr)
        return 2
    cluster, qos_cfg, accounts_cfg = argv
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            changed, kept = sync(cluster, Path(qos_cfg), Path(accounts_cfg))
        except SlurmError as error:
            print(f"clusterfab-slurm-accounts: {error}", file=sys.stderr)
            return 1
    for line in kept:
        print(f"clusterfab-slurm-accounts: {line}", file=sys.stderr)
    print("changed" if changed else "unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
