"""The controller's accounting program on Azure, piece by piece: the roots installed from the host's trust
store, the administrator password made once on the state disk and given to the flexible server through
Resource Manager (Servers - Update) at every run, the server waited for until Ready, slurmdbd's user made as
that administrator, and what the program says when it cannot."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import NameOID

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.nodes import accounting, azure_mysql
from clusterfab.scheduler.slurm.nodes.accounting import AccountingError, Master
from clusterfab.scheduler.slurm.nodes.azure_mysql import FlexibleServer, prepare_azure
from clusterfab.scheduler.slurm.nodes.fleet import CloudError
from tests.tls import certificate_authority, common_name, pem

ARM = "https://management.azure.com"
SUBSCRIPTION = "00000000-0000-0000-0000-000000000001"
GROUP = "llm-prod"
SERVER = "clusterfab-llm-prod-slurmdb"
URL = (
    f"{ARM}/subscriptions/{SUBSCRIPTION}/resourceGroups/{GROUP}/providers/Microsoft.DBforMySQL/"
    f"flexibleServers/{SERVER}?api-version=2023-12-30"
)
HOST = f"{SERVER}.mysql.database.azure.com"
SLURMDBD_PASSWORD = "0123456789abcdef" * 3


OPERATION = (
    f"{ARM}/subscriptions/{SUBSCRIPTION}/providers/Microsoft.DBforMySQL/locations/eastus"
    "/azureAsyncOperation/op-1?api-version=2023-12-30"
)


class FakeArm:
    """Resource Manager's answers for one flexible server: its states in turn, each GET taking the next
    (the last one stays), and the password update's operation statuses in turn; every request kept. As
    ImdsTokenHttp does, `operation` is the last answer's Azure-AsyncOperation header."""

    def __init__(
        self,
        states: list[str],
        *,
        refuse: CloudError | None = None,
        operation: list[dict[str, Any]] | None = None,
    ) -> None:
        self.states, self.refuse = list(states), refuse
        self.statuses = list(operation if operation is not None else [{"status": "Succeeded"}])
        self.calls: list[tuple[str, str, Any]] = []
        self.operation: str | None = None

    def __call__(self, method: str, url: str, body: Any = None) -> Any:
        self.calls.append((method, url, body))
        self.operation = None
        if self.refuse is not None:
            raise self.refuse
        if method == "PATCH":
            self.operation = OPERATION
            return None  # 202 Accepted, no body
        if url == OPERATION:
            return self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {
            "name": SERVER,
            "properties": {
                "state": state,
                "fullyQualifiedDomainName": HOST,
                "administratorLogin": "clusterfab",
                "version": "8.4",
            },
        }


def _server(arm: FakeArm, sleeps: list[float]) -> FlexibleServer:
    return FlexibleServer(
        arm, subscription=SUBSCRIPTION, resource_group=GROUP, name=SERVER, api=ARM, polls=3, poll_s=5.0,
        sleep=sleeps.append,
    )  # fmt: skip


@pytest.fixture
def state(tmp_path: Path) -> dict[str, Any]:
    """The state disk with slurmdbd's password, two root certificates in a trust store, the settings."""
    disk = tmp_path / "state"
    disk.mkdir()
    (disk / "slurmdbd.pass").write_text(SLURMDBD_PASSWORD + "\n")
    roots = []
    for name in ("DigiCert Global Root G2", "Microsoft RSA Root Certificate Authority 2017"):
        path = tmp_path / f"{name.replace(' ', '_')}.crt"
        path.write_text(pem(certificate_authority(common_name(name))[1]))
        roots.append(str(path))
    settings = {
        "cloud": "azure",
        "identifier": SERVER,
        "region": "eastus",
        "ca_certificates": roots,
        "ca_file": str(tmp_path / "accounting-db-ca.pem"),
    }
    return {"disk": disk, "roots": roots, "settings": settings}


def _run(state: dict[str, Any], arm: FakeArm, sleeps: list[float] | None = None) -> tuple[Any, list[Any]]:
    ran: list[Any] = []
    found = prepare_azure(
        state["settings"],
        str(state["disk"] / "slurmdbd.pass"),
        server=_server(arm, sleeps if sleeps is not None else []),
        sql=lambda master, sql, ca: ran.append((master, sql, ca)),
    )
    return found, ran


def test_the_program_gives_the_server_its_own_password_and_makes_slurmdbds_user_as_administrator(
    state: dict[str, Any],
) -> None:
    arm = FakeArm(["Ready"])
    found, ran = _run(state, arm)
    assert found == {"host": HOST, "port": 3306}
    password_file = state["disk"] / "mysql-administrator.pass"
    password = password_file.read_text().strip()
    assert stat.S_IMODE(password_file.stat().st_mode) == 0o600
    # Get (the server exists and is not being created), Update (the password), its operation, Get.
    assert arm.calls == [
        ("GET", URL, None),
        ("PATCH", URL, {"properties": {"administratorLoginPassword": password}}),
        ("GET", OPERATION, None),
        ("GET", URL, None),
    ]
    assert ran == [
        (
            Master(host=HOST, port=3306, user="clusterfab", password=password),
            accounting.user_sql(SLURMDBD_PASSWORD),
            state["settings"]["ca_file"],
        )
    ]
    # The two roots, and nothing else, are slurmdbd's CA bundle.
    installed = Path(state["settings"]["ca_file"]).read_text()
    assert installed == "\n".join(Path(p).read_text().strip() for p in state["roots"]) + "\n"
    assert password not in repr(ran[0][0])


def test_a_second_run_gives_the_same_password_again(state: dict[str, Any]) -> None:
    first, second = FakeArm(["Ready"]), FakeArm(["Ready"])
    _run(state, first)
    _run(state, second)
    patches = [call[2] for call in [*first.calls, *second.calls] if call[0] == "PATCH"]
    assert len(patches) == 2
    assert patches[0] == patches[1]


def test_the_program_waits_while_the_server_is_created_or_updated(state: dict[str, Any]) -> None:
    sleeps: list[float] = []
    arm = FakeArm(["Starting", "Starting", "Ready", "Updating", "Ready"])
    assert _run(state, arm, sleeps)[0] == {"host": HOST, "port": 3306}
    assert [c[0] for c in arm.calls] == ["GET", "GET", "GET", "PATCH", "GET", "GET", "GET"]
    assert sleeps == [5.0, 5.0, 5.0]


def test_the_program_waits_for_the_password_update_to_succeed(state: dict[str, Any]) -> None:
    sleeps: list[float] = []
    arm = FakeArm(
        ["Ready"], operation=[{"status": "InProgress"}, {"status": "InProgress"}, {"status": "Succeeded"}]
    )
    _run(state, arm, sleeps)
    assert [c[1] for c in arm.calls].count(OPERATION) == 3
    assert sleeps == [5.0, 5.0]


def test_a_failed_password_update_is_said_with_azures_error(state: dict[str, Any]) -> None:
    failed = {"status": "Failed", "error": {"code": "InternalServerError", "message": "try again"}}
    arm = FakeArm(["Ready"], operation=[failed])
    with pytest.raises(
        AccountingError,
        match=f"^the password update of flexible server {SERVER} is Failed, not Succeeded: "
        "InternalServerError: try again$",
    ) as refused:
        _run(state, arm)
    assert "administratorLoginPassword" not in str(refused.value)


def test_a_stopped_server_is_refused_with_its_state(state: dict[str, Any]) -> None:
    with pytest.raises(AccountingError, match=f"^flexible server {SERVER} is Stopped, not Ready$"):
        _run(state, FakeArm(["Stopped"]))


def test_a_server_still_updating_after_the_polls_is_refused(state: dict[str, Any]) -> None:
    sleeps: list[float] = []
    with pytest.raises(AccountingError, match=f"^flexible server {SERVER} is Updating, not Ready$"):
        _run(state, FakeArm(["Updating"]), sleeps)
    assert sleeps == [5.0, 5.0, 5.0]


def test_resource_manager_refusing_is_said_with_its_code(state: dict[str, Any]) -> None:
    arm = FakeArm(["Ready"], refuse=CloudError("AuthorizationFailed", "no read on the server"))
    refused = r"^Resource Manager refused GET of flexible server .* \(AuthorizationFailed\)"
    with pytest.raises(AccountingError, match=refused):
        _run(state, arm)


def test_a_missing_root_certificate_is_named(state: dict[str, Any]) -> None:
    missing = str(state["disk"] / "nowhere.crt")
    state["settings"]["ca_certificates"] = [missing]
    with pytest.raises(AccountingError, match=f"^the root certificate {missing} cannot be read"):
        _run(state, FakeArm(["Ready"]))


def test_administrator_passwords_meet_azures_rule_of_three_kinds() -> None:
    for _ in range(200):
        word = azure_mysql.new_administrator_password()
        assert len(word) == 33
        kinds = [any(c.isupper() for c in word), any(c.islower() for c in word), "-" in word]
        assert all(kinds), word
        # Nothing the client's option file would need to quote or escape.
        assert all(c.isalnum() or c == "-" for c in word)


def test_the_catalog_names_the_roots_azure_signs_with_in_the_hosts_trust_store() -> None:
    """Ubuntu's ca-certificates (this machine's Debian package has the same files) holds the two roots
    Microsoft names for Azure Database for MySQL (catalog source S-AZ-MYSQL-TLS)."""
    database = load_catalog().slurm.managed_database("azure")
    assert database is not None
    assert database.ca_certificates is not None
    names = []
    for path in database.ca_certificates:
        certificate = x509.load_pem_x509_certificate(Path(path).read_bytes())
        names.append(certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)
    assert names == ["DigiCert Global Root G2", "Microsoft RSA Root Certificate Authority 2017"]
