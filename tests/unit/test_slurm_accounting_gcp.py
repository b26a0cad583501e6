"""The controller's accounting program on GCP, piece by piece: the Cloud SQL instance and its server CA
through the Admin API, slurmdbd's user made or given its password through users.insert / users.update,
the operations polled, and what it says when it cannot. The Admin API is tests/fakes/cloudsql.py, which
holds every request and answer to the sqladmin.v1 discovery document. The whole program against a real
MariaDB and slurmdbd runs in tests/slurm/test_cloudsql_accounting_lab.py."""

from __future__ import annotations

import json
import stat
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterfab.catalog import load_catalog
from clusterfab.scheduler.slurm.hostvars import controller_vars
from clusterfab.scheduler.slurm.nodes import accounting
from clusterfab.scheduler.slurm.nodes.__main__ import main as nodes_main
from clusterfab.scheduler.slurm.nodes.accounting import AccountingError
from clusterfab.scheduler.slurm.nodes.gcp_cloudsql import OPERATION_POLLS, CloudSql, prepare_gcp
from clusterfab.scheduler.slurm.render import ACCOUNTING_CA_FILE
from tests.factories import spec
from tests.fakes.cloudsql import Call, FakeCloudSql, GoogleServer, route, violations_of
from tests.tls import certificate_authority, google_name, pem

PROJECT = "ml-prod"
INSTANCE = "clusterfab-llm-prod-slurmdb"
ADDRESS = "10.80.0.3"
API = "https://sqladmin.googleapis.com/v1"
ROOT = f"/v1/projects/{PROJECT}/instances/{INSTANCE}"
PASSWORD = "0123456789abcdef" * 3
POLL_S = 7.0


CA = pem(certificate_authority(google_name("Google Cloud SQL Server CA"))[1])
"""A self-signed CA certificate, as Cloud SQL's per-instance server CA is."""


@pytest.fixture
def fake() -> Iterator[FakeCloudSql]:
    found = FakeCloudSql(project=PROJECT, instance=INSTANCE, private_ip=ADDRESS, server_ca=CA)
    yield found
    # Every request the program made, and every answer the fake gave, is one the discovery document allows.
    assert found.violations == []


def _cloud_sql(fake: FakeCloudSql, sleeps: list[float], polls: int = OPERATION_POLLS) -> CloudSql:
    return CloudSql(
        fake.http,
        project=PROJECT,
        instance=INSTANCE,
        api=API,
        polls=polls,
        poll_s=POLL_S,
        sleep=sleeps.append,
    )


def _password_file(tmp_path: Path, text: str = PASSWORD + "\n") -> str:
    path = tmp_path / "slurmdbd.pass"
    path.write_text(text)
    return str(path)


def test_the_fake_admin_api_holds_requests_and_answers_to_the_discovery_document(fake: FakeCloudSql) -> None:
    """The checks the fake makes are real: what the document does not have is caught."""
    found = route("PUT", f"{ROOT}/users")
    assert found is not None
    assert (found[0].id, found[1]) == ("sql.users.update", {"project": PROJECT, "instance": INSTANCE})
    assert route("PATCH", f"{ROOT}/users") is None
    assert route("GET", f"/v1/projects/{PROJECT}/instances/{INSTANCE}/users") is None  # users.list: unused
    assert violations_of("User", {"name": "slurm", "hots": "%"}, "User") == [
        "User.hots is no field of the API"
    ]
    assert violations_of("Operation", {"status": "FINISHED"}, "Operation") == [
        "Operation.status: 'FINISHED' is none of "
        "['SQL_OPERATION_STATUS_UNSPECIFIED', 'PENDING', 'RUNNING', 'DONE']"
    ]
    assert violations_of("IpMapping", {"type": "PRIVATE", "ipAddress": 10}, "IpMapping") == [
        "IpMapping.ipAddress: 10 is no string"
    ]
    with pytest.raises(urllib.error.HTTPError) as refused:
        fake.http("GET", f"{API}/projects/{PROJECT}/instances/{INSTANCE}/users/slurm?hostname=%25")
    assert refused.value.code == 400
    assert fake.violations == ["sql.users.get: no query parameter 'hostname'"]
    fake.violations.clear()
    # Each method the program calls answers as its response schema says (checked inside the fake).
    fake.users[("slurm", "%")] = "x"
    assert fake.http("GET", f"{API}/projects/{PROJECT}/instances/{INSTANCE}")["state"] == "RUNNABLE"
    assert (
        fake.http("GET", f"{API}/projects/{PROJECT}/instances/{INSTANCE}/users/slurm?host=%25")["host"] == "%"
    )
    operation = fake.http(
        "PUT",
        f"{API}/projects/{PROJECT}/instances/{INSTANCE}/users?name=slurm&host=%25",
        {"name": "slurm", "host": "%", "password": "y"},
    )
    assert fake.http("GET", f"{API}/projects/{PROJECT}/operations/{operation['name']}")["status"] == "RUNNING"
    assert fake.http("GET", f"{API}/projects/{PROJECT}/operations/{operation['name']}")["status"] == "DONE"


def test_a_missing_user_is_created_with_the_password(fake: FakeCloudSql) -> None:
    sleeps: list[float] = []
    _cloud_sql(fake, sleeps).set_password("slurm", PASSWORD)
    [get, insert, poll, done] = fake.calls
    assert get == Call("sql.users.get", f"{ROOT}/users/slurm", {"host": "%"}, None)
    assert insert == Call(
        "sql.users.insert", f"{ROOT}/users", {}, {"name": "slurm", "host": "%", "password": PASSWORD}
    )
    assert (poll.method, done.method) == ("sql.operations.get", "sql.operations.get")
    assert sleeps == [POLL_S, POLL_S]  # PENDING, RUNNING, DONE
    assert fake.users == {("slurm", "%"): PASSWORD}


def test_an_existing_user_is_given_the_new_password(fake: FakeCloudSql) -> None:
    fake.users[("slurm", "%")] = "f" * 48
    fake.users[("slurm", "localhost")] = "e" * 48  # another host's user of that name is not touched
    _cloud_sql(fake, []).set_password("slurm", PASSWORD)
    assert [c.method for c in fake.calls] == [
        "sql.users.get",
        "sql.users.update",
        "sql.operations.get",
        "sql.operations.get",
    ]
    assert fake.calls[1] == Call(
        "sql.users.update",
        f"{ROOT}/users",
        {"name": "slurm", "host": "%"},
        {"name": "slurm", "host": "%", "password": PASSWORD},
    )
    assert fake.users == {("slurm", "%"): PASSWORD, ("slurm", "localhost"): "e" * 48}


def test_the_operation_is_polled_until_done(fake: FakeCloudSql) -> None:
    fake.polls_before_done = 3
    sleeps: list[float] = []
    _cloud_sql(fake, sleeps).set_password("slurm", PASSWORD)
    polls = [c for c in fake.calls if c.method == "sql.operations.get"]
    name = polls[0].path.rsplit("/", 1)[1]
    assert [c.path for c in polls] == [f"/v1/projects/{PROJECT}/operations/{name}"] * 4
    # PENDING when inserted, RUNNING three times, then DONE: a wait before each poll, none after.
    assert sleeps == [POLL_S] * 4


def test_an_operation_that_never_finishes_is_reported_after_the_last_poll(fake: FakeCloudSql) -> None:
    fake.polls_before_done = 10
    sleeps: list[float] = []
    with pytest.raises(AccountingError) as caught:
        _cloud_sql(fake, sleeps, polls=3).set_password("slurm", PASSWORD)
    name = fake.calls[-1].path.rsplit("/", 1)[1]
    assert str(caught.value) == f"Cloud SQL operation {name} not done after 3 polls"
    assert sleeps == [POLL_S] * 3


def test_an_operation_error_is_reported_with_its_code(fake: FakeCloudSql) -> None:
    fake.operation_error = ("ERROR_RDBMS", "Operation failed because another operation was in progress.")
    with pytest.raises(AccountingError) as caught:
        _cloud_sql(fake, []).set_password("slurm", PASSWORD)
    assert str(caught.value) == (
        "Cloud SQL refused: ERROR_RDBMS: Operation failed because another operation was in progress."
    )
    assert PASSWORD not in str(caught.value)
    assert fake.users == {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"state": "SUSPENDED"}, f"Cloud SQL instance {INSTANCE} is SUSPENDED, not RUNNABLE"),
        ({"state": "FAILED"}, f"Cloud SQL instance {INSTANCE} is FAILED, not RUNNABLE"),
        (
            {"ip_types": ("PRIMARY", "OUTGOING")},
            f"Cloud SQL instance {INSTANCE} has no private IP: it must be created on the cluster's network "
            "(private services access)",
        ),
        (
            {"ip_types": ()},
            f"Cloud SQL instance {INSTANCE} has no private IP: it must be created on the "
            "cluster's network (private services access)",
        ),
        ({"server_ca": None}, f"Cloud SQL instance {INSTANCE} names no server CA certificate"),
    ],
)
def test_an_instance_the_program_cannot_use_is_refused_with_the_reason(
    fake: FakeCloudSql, change: dict[str, Any], message: str
) -> None:
    for key, value in change.items():
        setattr(fake, key, value)
    with pytest.raises(AccountingError) as caught:
        _cloud_sql(fake, []).where()
    assert str(caught.value) == message


def test_the_instance_is_found_with_its_private_address_and_server_ca(fake: FakeCloudSql) -> None:
    fake.ip_types = ("PRIMARY", "PRIVATE")
    assert _cloud_sql(fake, []).where() == (ADDRESS, CA)
    assert fake.calls == [Call("sql.instances.get", ROOT, {}, None)]


def test_the_program_waits_while_the_instance_is_created_or_in_maintenance(fake: FakeCloudSql) -> None:
    """PENDING_CREATE and MAINTENANCE pass (accounting.WAITING_STATES): the program polls the instance
    until it is RUNNABLE, as it polls an operation."""
    fake.states = ["PENDING_CREATE", "MAINTENANCE", "MAINTENANCE"]
    sleeps: list[float] = []
    assert _cloud_sql(fake, sleeps).where() == (ADDRESS, CA)
    assert [c.method for c in fake.calls] == ["sql.instances.get"] * 4
    assert sleeps == [POLL_S] * 3


def test_an_instance_that_stays_in_maintenance_is_reported_after_the_last_poll(fake: FakeCloudSql) -> None:
    fake.state = "MAINTENANCE"
    sleeps: list[float] = []
    with pytest.raises(AccountingError, match=f"Cloud SQL instance {INSTANCE} is MAINTENANCE"):
        _cloud_sql(fake, sleeps, polls=3).where()
    assert len(sleeps) == 3


@pytest.mark.parametrize(
    ("method", "status", "calls"),
    [
        ("sql.instances.get", 403, ["sql.instances.get"]),
        # Not 404: the program does not take the user for missing and insert it.
        ("sql.users.get", 403, ["sql.users.get"]),
        ("sql.users.get", 500, ["sql.users.get"]),
        ("sql.users.insert", 403, ["sql.users.get", "sql.users.insert"]),
    ],
)
def test_a_refusal_by_the_admin_api_is_reported_with_its_status(
    fake: FakeCloudSql, method: str, status: int, calls: list[str]
) -> None:
    fake.refuse[method] = (status, "The client is not authorized to make this request.")
    phrase = {403: "Forbidden", 500: "Internal Server Error"}[status]
    cloud_sql = _cloud_sql(fake, [])
    call = (
        cloud_sql.where
        if method == "sql.instances.get"
        else lambda: cloud_sql.set_password("slurm", PASSWORD)
    )
    with pytest.raises(AccountingError) as caught:
        call()
    assert str(caught.value) == f"the Cloud SQL Admin API refused ({status}): {phrase}"
    assert [c.method for c in fake.calls] == calls
    assert fake.users == {}


@pytest.mark.parametrize(
    "text",
    ["", "short\n", "0123456789ABCDEF" * 3, f"{PASSWORD}' OR '1'='1", f"{PASSWORD} {PASSWORD}"],
)
def test_a_password_that_is_not_the_controllers_hex_is_refused_before_anything_sets_it(
    fake: FakeCloudSql, tmp_path: Path, text: str
) -> None:
    settings = {"ca_file": str(tmp_path / "ca.pem")}
    with pytest.raises(AccountingError) as caught:
        prepare_gcp(settings, _password_file(tmp_path, text), cloud_sql=_cloud_sql(fake, []))
    assert str(caught.value) == "slurmdbd's password must be the hex string the controller made"
    assert [c.method for c in fake.calls] == ["sql.instances.get"]
    assert fake.users == {}


def test_the_server_ca_is_installed_0644_with_its_certificates_only(
    fake: FakeCloudSql, tmp_path: Path
) -> None:
    fake.server_ca = (
        "subject=C=US, O=Google, Inc, CN=Google Cloud SQL Server CA\n"
        + CA
        + "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n"
        + "-----END PRIVATE KEY-----\n"
    )
    ca_file = tmp_path / "accounting-db-ca.pem"
    settings = {"ca_file": str(ca_file)}
    endpoint = prepare_gcp(settings, _password_file(tmp_path), cloud_sql=_cloud_sql(fake, []))
    assert endpoint == {"host": ADDRESS, "port": 3306}
    assert ca_file.read_text() == CA
    assert stat.S_IMODE(ca_file.stat().st_mode) == 0o644
    assert fake.users == {("slurm", "%"): PASSWORD}
    # Again: the same certificate is not written again, and the user is given the same password.
    before = ca_file.stat().st_mtime_ns
    assert prepare_gcp(settings, _password_file(tmp_path), cloud_sql=_cloud_sql(fake, [])) == endpoint
    assert ca_file.stat().st_mtime_ns == before
    assert [c.method for c in fake.calls].count("sql.users.update") == 1


@pytest.mark.parametrize(
    "server_ca",
    [
        CA.replace("MII", "MI", 1),  # its base64 broken
        # Good base64 of something else (a private key's DER) between certificate lines.
        "-----BEGIN CERTIFICATE-----\n"
        "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n"
        "-----END CERTIFICATE-----\n",
    ],
    ids=["broken-base64", "no-certificate"],
)
def test_a_server_ca_that_is_no_certificate_is_refused_and_nothing_installed(
    fake: FakeCloudSql, tmp_path: Path, server_ca: str
) -> None:
    fake.server_ca = server_ca
    ca_file = tmp_path / "accounting-db-ca.pem"
    with pytest.raises(AccountingError) as caught:
        prepare_gcp({"ca_file": str(ca_file)}, _password_file(tmp_path), cloud_sql=_cloud_sql(fake, []))
    assert str(caught.value) == "the instance's serverCaCert holds a malformed certificate"
    assert not ca_file.exists()
    assert fake.users == {}


def test_the_program_signs_in_with_the_metadata_servers_token_and_prints_the_endpoint(
    fake: FakeCloudSql, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """main() over HTTP: the VM's token from the metadata server (Metadata-Flavor: Google), the Admin API
    with it as the Bearer token, and the endpoint for slurmdbd.conf on stdout."""
    server = GoogleServer(fake)
    ca_file = tmp_path / "accounting-db-ca.pem"
    settings = {
        "cloud": "gcp",
        "identifier": INSTANCE,
        "project": PROJECT,
        "ca_file": str(ca_file),
        "metadata_url": server.metadata_url,
        "api_url": server.api_url,
        "retry_wait_s": 0,
    }
    try:
        assert accounting.main(settings, _password_file(tmp_path)) == 0
    finally:
        server.close()
    out = capsys.readouterr().out
    assert out == f'{{"host": "{ADDRESS}", "port": 3306}}\n'
    assert fake.tokens_issued == 1
    assert [c.method for c in fake.calls] == [
        "sql.instances.get",
        "sql.users.get",
        "sql.users.insert",
        "sql.operations.get",
        "sql.operations.get",
    ]
    assert fake.users == {("slurm", "%"): PASSWORD}
    assert ca_file.read_text() == CA


def test_an_instance_the_service_account_may_not_get_is_reported_with_the_status(
    fake: FakeCloudSql, tmp_path: Path
) -> None:
    server = GoogleServer(fake)
    settings = {
        "cloud": "gcp",
        "identifier": INSTANCE,
        "project": "another-project",  # the service account has no right there (the fake answers 403)
        "ca_file": str(tmp_path / "ca.pem"),
        "metadata_url": server.metadata_url,
        "api_url": server.api_url,
    }
    try:
        with pytest.raises(AccountingError) as caught:
            accounting.main(settings, _password_file(tmp_path))
    finally:
        server.close()
    assert str(caught.value) == "the Cloud SQL Admin API refused (403): Forbidden"
    assert not (tmp_path / "ca.pem").exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cloud": "gcp", "identifier": "x", "ca_file": "f"}, "the accounting settings lack project"),
        ({"cloud": "gcp", "project": "p"}, "the accounting settings lack identifier, ca_file"),
        (
            {"identifier": "x", "project": "p", "ca_file": "f"},
            "the accounting settings name no cloud this program knows (None)",
        ),
        ({"cloud": "azure"}, "the accounting settings lack identifier, ca_file, ca_certificates"),
        ({"cloud": "toy"}, "the accounting settings name no cloud this program knows ('toy')"),
    ],
)
def test_the_command_says_which_gcp_settings_are_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: dict[str, Any], message: str
) -> None:
    config = tmp_path / "accounting.json"
    config.write_text(json.dumps(settings))
    argv = ["accounting", "--config", str(config), "--password-file", _password_file(tmp_path)]
    assert nodes_main(argv) == 1
    assert capsys.readouterr() == ("", f"clusterfab_slurm_nodes accounting: {message}\n")


def test_the_controller_is_told_which_instance_of_which_project_to_find() -> None:
    cluster = spec(
        "gcp",
        name="llm",
        node_groups=[{"name": "h100", "machine_type": "a3-megagpu-8g", "count": 1}],
        scheduler={"kind": "slurm", "accounting": "managed"},
    )
    found = controller_vars(cluster, load_catalog().slurm, stack="prod", files_dir="/f", project=PROJECT)
    assert found["slurm_controller_database"] == {
        "cloud": "gcp",
        "identifier": INSTANCE,
        "project": PROJECT,
        "ca_file": ACCOUNTING_CA_FILE,
    }
    assert ACCOUNTING_CA_FILE == "/etc/slurm/accounting-db-ca.pem"
