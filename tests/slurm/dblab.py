"""A Slurm lab whose accounting database stands in for a cloud's managed one (RDS, Cloud SQL): MariaDB that
takes TLS connections only, on an address of its own, the controller's accounting program run as the
slurm_controller role runs it, and slurmdbd.conf filled in as the role fills it. The clouds' labs
(test_managed_accounting_lab.py, test_cloudsql_accounting_lab.py) add the cloud's API and certificates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_files
from clusterfab.scheduler.slurm.render import ACCOUNTING_CA_FILE, render_slurm
from clusterfab.spec import ClusterSpec
from tests.slurm.lab import SlurmLab
from tests.slurm.rendered import node_scripts
from tests.tls import key_pem, pem

PASSWORD_FILE = "/srv/clusterfab-slurm-state/slurmdbd.pass"
"""The role's password file on the state disk."""
CONFIG = "/etc/slurm/clusterfab-accounting.json"
"""The accounting program's settings, where the role writes them."""
TLS_DIR = "/etc/mysql/lab-tls"


def lab_files(cluster: ClusterSpec, *, stack: str, files_dir: str) -> dict[str, str]:
    """What the lab's controller has: the rendered Slurm files, the node scripts and the controller's
    programs where the role installs them (by their absolute paths under `files_dir`)."""
    catalog = load_catalog()
    programs = {
        f"{files_dir}/{name}": text
        for name, text in controller_files(cluster, catalog.slurm, stack=stack).items()
        if name.startswith("lib/")
    }
    return {**render_slurm(cluster, catalog.slurm), **node_scripts(), **programs}


def sql_string(value: str) -> str:
    """`value` inside a single-quoted SQL string literal."""
    return value.replace("\\", "\\\\").replace("'", "\\'")


class ManagedDatabaseLab(SlurmLab):
    settings: dict[str, Any]
    """The accounting program's settings (the role's slurm_controller_database, with the lab's seams)."""
    files_dir: str
    """Where the controller's programs are (their package under `lib/`)."""
    program_env = ""
    """Environment the program runs with (`NAME=value ...`)."""
    slurmdbd_command = "exec slurmdbd -D"
    endpoint: dict[str, Any]
    program_output = ""
    other_ca = ""
    """The PEM of a second authority, which signed nothing here (the tests swap it in)."""

    def _serve_over_tls(
        self, address: str, ca: x509.Certificate, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate
    ) -> None:
        """MariaDB at `address`, TLS only (require_secure_transport), with this server certificate."""
        tls = self.path(TLS_DIR)
        tls.mkdir(parents=True)
        (tls / "ca.pem").write_text(pem(ca))
        (tls / "server.pem").write_text(pem(cert))
        (tls / "server-key.pem").write_bytes(key_pem(key))
        self._host_in_ns(f"ip addr add {address}/32 dev lo")
        self.run(f"chown -R mysql:mysql {TLS_DIR} && chmod 0600 {TLS_DIR}/server-key.pem")
        self._daemon(
            "mariadb",
            f"exec mariadbd --user=mysql --bind-address={address} --port=3306"
            " --socket=/run/mysqld/mysqld.sock --innodb-lock-wait-timeout=900"
            f" --ssl-ca={TLS_DIR}/ca.pem --ssl-cert={TLS_DIR}/server.pem --ssl-key={TLS_DIR}/server-key.pem"
            " --require-secure-transport=ON --log-error=/var/log/mysql/error.log",
        )
        self._ready("mariadb", "mariadb -e 'select 1'")

    def _prepare_accounting(self) -> None:
        """The role's steps: the password on the state disk, the program's settings, the program."""
        self.run(
            f"install -d -m 0700 {Path(PASSWORD_FILE).parent} && umask 077 &&"
            f" python3 -c 'import secrets; print(secrets.token_hex(24))' > {PASSWORD_FILE}"
        )
        self.path(CONFIG).write_text(json.dumps(self.settings))
        self.program_output = self.accounting().stdout
        self.endpoint = json.loads(self.program_output)
        self.storage_pass = self.path(PASSWORD_FILE).read_text().strip()

    def accounting(self, *, check: bool = True) -> Any:
        """The controller's accounting program, as the role runs it."""
        return self.run(
            f"{self.program_env} PYTHONPATH={self.files_dir}/lib python3 -m clusterfab_slurm_nodes accounting"
            f" --config {CONFIG} --password-file {PASSWORD_FILE}".strip(),
            check=check,
            timeout=120,
        )

    def _start_slurmdbd(self) -> None:
        """slurmdbd.conf with the role's substitutions (the endpoint the program printed, the password it
        gave the user); fails the lab's start with slurmdbd's own reason when it keeps no accounting."""
        self.files["slurmdbd.conf"] = (
            self.files["slurmdbd.conf"]
            .replace("@SLURMDBD_STORAGE_HOST@", str(self.endpoint["host"]))
            .replace("@SLURMDBD_STORAGE_PORT@", str(self.endpoint["port"]))
        )
        self._write_slurmdbd_conf()
        self._daemon("slurmdbd", self.slurmdbd_command)
        refusal = self.slurmdbd_outcome()
        if refusal:
            raise AssertionError(f"slurmdbd keeps no accounting in the managed database: {refusal}")
        self.run(f"sacctmgr -i add cluster {self.cluster}")

    def slurmdbd_outcome(self, timeout: float = 60) -> str:
        """Wait for slurmdbd to keep the accounting in the database (then "") or to log why it cannot: its
        first database error, less the time stamp."""
        refusal: list[str] = []

        def settled() -> bool:
            log = self.log("slurmdbd").splitlines()
            refusal.extend(
                line.split("] ", 1)[1] for line in log if "] error: mysql_" in line or "] fatal: " in line
            )
            return (
                bool(refusal) or self.run("sacctmgr -n show cluster", check=False, timeout=20).returncode == 0
            )

        self.wait_for(settled, timeout=timeout, what="slurmdbd to connect to the database or say why not")
        return refusal[0] if refusal else ""

    def restart_slurmdbd(self, *, ca_bundle: str, command: str | None = None) -> str:
        """slurmdbd again (`command`, default the lab's), with `ca_bundle` where slurmdbd.conf names its
        CA; what it logged (see slurmdbd_outcome)."""
        proc = self._daemons.pop("slurmdbd")
        # Signalled inside the lab: a SIGTERM to nsenter outside would leave slurmdbd answering until
        # the new one kills it, and sacctmgr would take the old daemon's answer for the new one's.
        self.run("pkill -TERM -x slurmdbd", check=False)
        proc.wait(timeout=30)
        self.wait_for(
            lambda: self.run("pgrep -x slurmdbd", check=False).returncode == 1,
            timeout=30,
            what="the old slurmdbd to exit",
        )
        self.run(f": > {self._log_paths()['slurmdbd']}")
        self.path(ACCOUNTING_CA_FILE).write_text(ca_bundle)
        self._daemon("slurmdbd", command or self.slurmdbd_command)
        return self.slurmdbd_outcome()

    def close(self) -> None:
        try:
            super().close()
        finally:
            if getattr(self, "net", None) is not None:
                self.net.close()
