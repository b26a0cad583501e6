"""Reaching an Azure host from the operator's machine with the `az` CLI, through no open port.

- A command: Run Command (`az vm run-command invoke` / `az vmss run-command invoke --instance-id`), which
  hands the script to the VM agent over Azure's control plane. It needs the VM agent running on the host,
  the host's outbound reach to Azure, and the caller's `Microsoft.Compute/virtualMachines/runCommand/action`
  (e.g. Virtual Machine Contributor); it returns the output when the script ends (no streaming), and a
  script runs for at most 90 minutes (learn.microsoft.com/azure/virtual-machines/linux/run-command).
- A port: SSH over Azure Bastion's native client support (`az network bastion ssh ... -- -N -L`), which
  needs a Standard (or Premium) Bastion with native client (tunneling) enabled in the cluster's network,
  the `ssh` CLI extension, and Microsoft Entra login on the VM (the AADSSHLoginForLinux extension, the
  caller's Virtual Machine Administrator Login role) (learn.microsoft.com/azure/bastion/connect-vm-native-
  client-linux). `az network bastion tunnel` reaches the VM's network address only, where a service that
  listens on the loopback address (Grafana) is not, so the port is forwarded by SSH instead.

`host` is the VM's resource id (a scale set instance's: `.../virtualMachineScaleSets/<set>/virtualMachines/
<instance id>`), which names its resource group; the stack's Bastion is `<resource group>-bastion`.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING

from clusterfab.clouds.azure import store
from clusterfab.clouds.azure.ids import GUID
from clusterfab.clouds.base import ReportChannel
from clusterfab.core.errors import UsageError
from clusterfab.core.vocab import HEALTH_TAG, IDENTITY_TAG

if TYPE_CHECKING:
    from clusterfab.outputs import BlueprintOutput, StackOutputs

_VM_ID = re.compile(
    r"^/subscriptions/(?P<subscription>[^/]+)/resourceGroups/(?P<group>[^/]+)/providers/Microsoft\.Compute/"
    r"(?:virtualMachines/(?P<vm>[^/]+)|virtualMachineScaleSets/(?P<set>[^/]+)/virtualMachines/(?P<index>\d+))$",
    re.IGNORECASE,
)


def bastion_name(resource_group: str) -> str:
    """The Bastion host the stack creates in its resource group (the realizer names it so)."""
    return f"{resource_group}-bastion"


def _parse(host: str) -> re.Match[str]:
    match = _VM_ID.match(host)
    if match is None:
        raise UsageError(
            f"'{host}' is not an Azure VM resource id (/subscriptions/<id>/resourceGroups/<group>/providers/"
            "Microsoft.Compute/virtualMachines/<name>, or a scale set instance's)"
        )
    return match


def run_command(where: BlueprintOutput, host: str, command: str) -> list[str]:
    """`command` on the VM or scale set instance `host`, through Run Command."""
    del where  # the resource id names the subscription and resource group
    match = _parse(host)
    scope = ["--subscription", match["subscription"], "--resource-group", match["group"]]
    if match["vm"] is not None:
        target = ["vm", "run-command", "invoke", *scope, "--name", match["vm"]]
    else:
        target = [
            "vmss",
            "run-command",
            "invoke",
            *scope,
            "--name",
            match["set"],
            "--instance-id",
            match["index"],
        ]
    # The script's output alone (Run Command wraps it in a JSON status: "[stdout]" and "[stderr]"
    # sections in its message), as text.
    query = ["--query", "value[0].message", "--output", "tsv"]
    return ["az", *target, "--command-id", "RunShellScript", "--scripts", command, *query]


RUN_COMMAND_OUTPUT_BYTES = 4096
"""Run Command returns only the last 4096 bytes of a script's output (learn.microsoft.com/azure/
virtual-machines/linux/run-command, "Restrictions"): a longer report travels through the cluster's
`clusterfab-health` container instead (`report_channel`)."""
_TOKEN = (
    "http://169.254.169.254/metadata/identity/oauth2/token?api-version=2018-02-01"
    "&resource=https%3A%2F%2Fstorage.azure.com%2F"
)
_TAGS = "http://169.254.169.254/metadata/instance/compute/tagsList?api-version=2021-02-01"
_IDENTITY = (
    "import json, sys; ids = [t['value'] for t in json.load(sys.stdin) if t['name'] == sys.argv[1]]; "
    "print('&client_id=' + ids[0] if ids else '', end='')"
)
"""The client id a host with two identities names in its token request (its tag IDENTITY_TAG, as the
boot script reads it); empty on a host with one."""


def upload_command(command: str, url: str) -> str:
    """`command` with its standard output stored as a block blob at `url`, with the token of the host's
    identity (the controller's has Storage Blob Data Contributor on the container, as for its boot
    verdicts; named by its client id where the host has a second identity); its standard error still reaches
    Run Command's output. Exits with the command's status."""
    return "\n".join(
        [
            "report=$(mktemp)",
            "trap 'rm -f \"$report\"' EXIT",
            f'( {command} ) >"$report"',
            "status=$?",
            f"identity=$(curl -fsS --noproxy '*' -H 'Metadata: true' {shlex.quote(_TAGS)}"
            f" | python3 -c {shlex.quote(_IDENTITY)} {IDENTITY_TAG})",
            f"token=$(curl -fsS --noproxy '*' -H 'Metadata: true' {shlex.quote(_TOKEN)}\"$identity\""
            " | python3 -c 'import json, sys; print(json.load(sys.stdin)[\"access_token\"])')",
            'printf \'Authorization: Bearer %s\\n\' "$token" >"$report.auth"',
            "curl -fsS -X PUT -H @\"$report.auth\" -H 'x-ms-version: 2021-08-06'"
            " -H 'x-ms-blob-type: BlockBlob' -H 'Content-Type: application/json'"
            f' --data-binary @"$report" {shlex.quote(url)}'
            " || echo 'the report could not be stored' >&2",
            'rm -f "$report.auth"',
            "exit $status",
        ]
    )


def report_channel(outputs: StackOutputs) -> ReportChannel:
    """Reports through the cluster bucket's `clusterfab-health` container, read back with `az`."""
    account = outputs.bucket.partition("/")[0]
    health = store.AzureBlobHealthStore(f"{account}/{HEALTH_TAG}")

    def fetch(key: str) -> bytes | None:
        found = health.get(key)
        return found.body if found is not None else None

    return ReportChannel(wrap=lambda command, key: upload_command(command, health.location(key)), fetch=fetch)


def forward_port(
    where: BlueprintOutput, host: str, port: int, *, loopback: str, local_port: int
) -> list[str]:
    """An SSH port forward to `host` through the stack's Bastion. After `--`, ssh's own arguments: forward
    only (-N), and fail rather than sit there when the local port is taken (ExitOnForwardFailure)."""
    del where
    match = _parse(host)
    return [
        "az", "network", "bastion", "ssh",
        "--subscription", match["subscription"],
        "--resource-group", match["group"],
        "--name", bastion_name(match["group"]),
        "--target-resource-id", host,
        "--auth-type", "AAD",
        "--",
        "-N",
        "-L", f"{local_port}:{loopback}:{port}",
        "-o", "ExitOnForwardFailure=yes",
    ]  # fmt: skip


OPERATORS_SETTING = "operators"
"""Stack config `clusterfab:operators`: who else opens `clusterfab dashboard` on the stack, as
`["Group:<object id>", "User:<object id>", "ServicePrincipal:<object id>"]`; each gets Virtual Machine
User Login on the Slurm controller (the deployer has administrator login already)."""
_OPERATOR = re.compile(rf"(User|Group|ServicePrincipal):({GUID})")


def operators(value: object) -> tuple[tuple[str, str], ...]:
    """The `clusterfab:operators` setting as (object id, principal type) pairs; ValueError naming every entry
    that is not `<User|Group|ServicePrincipal>:<object id>`."""
    if value is None:
        return ()
    entries = value if isinstance(value, list) else [value]
    found, bad = [], []
    for entry in entries:
        matched = _OPERATOR.fullmatch(entry) if isinstance(entry, str) else None
        if matched is None:
            bad.append(repr(entry))
        else:
            found.append((matched.group(2).lower(), matched.group(1)))
    if bad or not isinstance(value, list):
        raise ValueError(
            f"clusterfab:{OPERATORS_SETTING} must be a list of <User|Group|ServicePrincipal>:<object id>, "
            'e.g. ["Group:$(az ad group show --group ops --query id -o tsv)"]; '
            f"not {', '.join(bad) or repr(value)}"
        )
    return tuple(found)
