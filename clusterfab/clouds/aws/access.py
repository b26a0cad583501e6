"""Reaching an AWS host from the operator's machine: SSM Session Manager (`aws ssm start-session` with the
session-manager-plugin), which needs no open port and no public address on the instance."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clusterfab.outputs import BlueprintOutput

AWS_INTERACTIVE_COMMAND = "AWS-StartInteractiveCommand"
"""The AWS-owned Session document that runs one command (its parameter `command`) in a session instead
of a shell (AWS Systems Manager User Guide, "Start a session", interactive and noninteractive commands:
docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-sessions-start.html
#sessions-start-interactive-commands; sessionType InteractiveCommands, "only supported for sessions
started from the AWS CLI": .../session-manager-restrict-command-access.html).

A session rather than `aws ssm send-command`: the report of a large cluster is longer than the 24,000
characters GetCommandInvocation returns of a command's stdout (botocore's ssm model,
StandardOutputContent), `aws ssm wait command-executed` gives up after 100 seconds (botocore's ssm
waiter CommandExecuted: 20 attempts 5 seconds apart) where a level-3 check runs for 15 minutes and more,
and a session streams the check's progress as it goes. The session runs as ssm-user, whom the SSM
Agent puts in sudoers (AWS Systems Manager workshop, "About the ssm-user account"); the check needs
root."""
AWS_PORT_FORWARDING = "AWS-StartPortForwardingSession"
"""The SSM document that forwards one port of the instance to the caller (no inbound rule needed); it
connects to the instance's loopback address."""


def _parameters(parameters: dict[str, list[str]]) -> str:
    # JSON, not the CLI's shorthand `command=...`, which splits values at commas (--nodes a,b).
    return json.dumps(parameters, separators=(",", ":"))


def run_command(where: BlueprintOutput, host: str, command: str) -> list[str]:
    """An interactive-command session on the instance `host` (its id)."""
    return [
        "aws", "ssm", "start-session",
        "--region", where.region,
        "--target", host,
        "--document-name", AWS_INTERACTIVE_COMMAND,
        "--parameters", _parameters({"command": [command]}),
    ]  # fmt: skip


def forward_port(
    where: BlueprintOutput, host: str, port: int, *, loopback: str, local_port: int
) -> list[str]:
    """A port forwarding session to the instance `host` (its id)."""
    del loopback  # the document always connects to the instance's own loopback address
    parameters = {"portNumber": [str(port)], "localPortNumber": [str(local_port)]}
    return [
        "aws", "ssm", "start-session",
        "--region", where.region,
        "--target", host,
        "--document-name", AWS_PORT_FORWARDING,
        "--parameters", _parameters(parameters),
    ]  # fmt: skip
