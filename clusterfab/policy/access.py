"""Who may reach and act on the cluster: no SSH / RDP from the internet, no IAM grant of everything.

- SSH / RDP: no AWS security group rule (inline, `ec2.SecurityGroupRule`, `vpc.SecurityGroupIngressRule`)
  and no GCP firewall rule lets a public range wider than one site's (`clusterfab.core.exposure`, the
  same test as the blueprint's BP111) reach port 22 or 3389. IAP's forwarding range is IAP, not the
  internet. People reach nodes through SSM Session Manager (AWS) or IAP (GCP).
- IAM: no policy document (role / user / group inline policies, managed policies, a role's
  `inlinePolicies`) allows every action (`*`) on every resource, or allows with `NotAction` (every
  action but a few); no AdministratorAccess attachment.
- Secrets: no statement allows a Secrets Manager action on a secret ARN with a wildcard in its region,
  account or name (`*`, `arn:aws:secretsmanager:us-east-1:*:secret:x-*`): a name pattern reads every secret
  it prefixes, in any account that trusts the role. Only the `-??????` that stands for the six random
  characters Secrets Manager appends to a secret's ARN may end the name.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator, Mapping
from fnmatch import fnmatchcase
from typing import Any

from clusterfab.core import exposure
from clusterfab.core.vocab import IAP_TCP_FORWARDING_RANGE
from clusterfab.policy import azure_checks
from clusterfab.policy.checks import short
from clusterfab.policy.resources import Resource, document, integer, items, strings

ADMIN_PORTS = {22: "SSH", 3389: "RDP"}
_ALL_PROTOCOLS = {"-1", "all"}
"""AWS: `-1` is every protocol and port (EC2 API, IpPermission.IpProtocol); GCP: `all`."""
_TCP = {"tcp", "6"}
_IAP = ipaddress.IPv4Network(IAP_TCP_FORWARDING_RANGE)


def _ports(protocol: Any, from_port: Any, to_port: Any) -> list[int]:
    """The admin ports a rule for `protocol` and the port range opens."""
    name = str(protocol or "").lower()
    if name in _ALL_PROTOCOLS:
        return list(ADMIN_PORTS)
    if name not in _TCP:
        return []
    low, high = integer(from_port), integer(to_port)
    low = 0 if low is None or low < 0 else low
    high = 65535 if high is None or high < 0 else high
    return [port for port in ADMIN_PORTS if low <= port <= high]


def _exposed(what: str, ports: list[int], cidrs: list[str], *, iap_ok: bool = False) -> Iterator[str]:
    for cidr in cidrs:
        net = exposure.network(cidr)
        if net is None or not exposure.too_public(net):
            continue
        if iap_ok and isinstance(net, ipaddress.IPv4Network) and net.subnet_of(_IAP):
            continue  # IAP's TCP forwarders
        for port in ports:
            yield (
                f"{what} opens {ADMIN_PORTS[port]} (port {port}) to {exposure.describe(net)}: reach nodes "
                "through SSM Session Manager (AWS) or IAP (GCP), or allow only an office or VPN range "
                f"(a /{exposure.PUBLIC_PREFIX_MIN} or narrower)"
            )


def _ingress_rule(resource: Resource) -> list[str]:
    props = resource.props
    ports = _ports(props.get("ipProtocol"), props.get("fromPort"), props.get("toPort"))
    cidrs = strings(props.get("cidrIpv4")) + strings(props.get("cidrIpv6"))
    return list(_exposed(f"security group rule {resource.name}", ports, cidrs))


def _rule_block(what: str, rule: Mapping[str, Any]) -> list[str]:
    ports = _ports(rule.get("protocol"), rule.get("fromPort"), rule.get("toPort"))
    cidrs = strings(rule.get("cidrBlocks")) + strings(rule.get("ipv6CidrBlocks"))
    return list(_exposed(what, ports, cidrs))


def _security_group(resource: Resource) -> list[str]:
    return [
        message
        for index, rule in enumerate(items(resource.props.get("ingress")))
        for message in _rule_block(f"security group {resource.name} (ingress {index})", rule)
    ]


def _security_group_rule(resource: Resource) -> list[str]:
    if str(resource.props.get("type", "")).lower() != "ingress":
        return []
    return _rule_block(f"security group rule {resource.name}", resource.props)


def _firewall_ports(allow: Mapping[str, Any]) -> list[int]:
    name = str(allow.get("protocol") or "").lower()
    if name in _ALL_PROTOCOLS:
        return list(ADMIN_PORTS)
    if name not in _TCP:
        return []
    ranges = strings(allow.get("ports"))
    if not ranges:
        return list(ADMIN_PORTS)  # no ports: every port (compute.v1, Firewall.allowed[].ports)
    opened = set()
    for text in ranges:
        low, _, high = text.partition("-")
        first, last = integer(low), integer(high or low)
        opened |= {p for p in ADMIN_PORTS if first is not None and last is not None and first <= p <= last}
    return sorted(opened)


def _firewall(resource: Resource) -> list[str]:
    props = resource.props
    if str(props.get("direction") or "INGRESS").upper() != "INGRESS":
        return []
    cidrs = strings(props.get("sourceRanges"))
    if not cidrs and not strings(props.get("sourceTags")) and not strings(props.get("sourceServiceAccounts")):
        # An ingress rule with no source at all is created for 0.0.0.0/0 (hashicorp/terraform-provider-
        # google#6789: the API fills in the whole internet).
        cidrs = ["0.0.0.0/0"]
    ports = sorted({port for allow in items(props.get("allows")) for port in _firewall_ports(allow)})
    return list(_exposed(f"firewall rule {resource.name}", ports, cidrs, iap_ok=True))


_INGRESS_CHECKS: dict[str, Callable[[Resource], list[str]]] = {
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": _ingress_rule,
    "aws:ec2/securityGroupRule:SecurityGroupRule": _security_group_rule,
    "aws:ec2/securityGroup:SecurityGroup": _security_group,
    "gcp:compute/firewall:Firewall": _firewall,
    **azure_checks.INGRESS_CHECKS,
}


def admin_ports_from_internet(resource: Resource) -> list[str]:
    check = _INGRESS_CHECKS.get(resource.type)
    return check(resource) if check is not None else []


# --- IAM -------------------------------------------------------------------------------------------

_ADMINISTRATOR_ACCESS = re.compile(r"^arn:aws[a-z-]*:iam::aws:policy/AdministratorAccess$")
"""AWS's managed policy that allows every action on every resource, in any partition."""
_EVERY_ACTION = {"*", "*:*"}


def _wildcard_statements(policy: Any) -> Iterator[str]:
    """What each statement of a policy document grants too broadly, in words."""
    for index, statement in enumerate(items(document(policy).get("Statement"))):
        if str(statement.get("Effect", "")).lower() != "allow":
            continue
        sid = statement.get("Sid") or index
        if (excluded := statement.get("NotAction")) is not None:
            yield f"statement {sid} allows every action but {', '.join(strings(excluded))} (NotAction)"
        elif set(strings(statement.get("Action"))) & _EVERY_ACTION and (
            "*" in strings(statement.get("Resource")) or statement.get("NotResource") is not None
        ):
            yield f"statement {sid} allows every action on every resource (Action '*', Resource '*')"


_POLICY_TYPES = {
    "aws:iam/rolePolicy:RolePolicy",
    "aws:iam/policy:Policy",
    "aws:iam/userPolicy:UserPolicy",
    "aws:iam/groupPolicy:GroupPolicy",
}
_ATTACHMENT_TYPES = {
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    "aws:iam/userPolicyAttachment:UserPolicyAttachment",
    "aws:iam/groupPolicyAttachment:GroupPolicyAttachment",
    "aws:iam/policyAttachment:PolicyAttachment",
}
_ROLE = "aws:iam/role:Role"


def _documents(resource: Resource) -> list[tuple[str, Any]]:
    """The policy documents a resource carries, each with where it is (`inline policy x `, or nothing)."""
    props = resource.props
    if resource.type == _ROLE:
        return [
            (f"inline policy {inline.get('name') or index} ", inline.get("policy"))
            for index, inline in enumerate(items(props.get("inlinePolicies")))
        ]
    return [("", props.get("policy"))] if resource.type in _POLICY_TYPES else []


def _attached(resource: Resource) -> list[str]:
    """The managed policies a resource attaches."""
    if resource.type == _ROLE:
        return strings(resource.props.get("managedPolicyArns"))
    return strings(resource.props.get("policyArn")) if resource.type in _ATTACHMENT_TYPES else []


def _statement_problems(resource: Resource, problems: Callable[[Any], Iterator[str]]) -> list[str]:
    """What `problems` finds in each policy document the resource carries, named with the resource and
    where in it (`aws:iam/rolePolicy:RolePolicy name inline policy x statement ...`)."""
    where = f"{short(resource)} {resource.name}"
    return [f"{where} {place}{what}" for place, policy in _documents(resource) for what in problems(policy)]


def wildcard_iam(resource: Resource) -> list[str]:
    if (check := azure_checks.ROLE_CHECKS.get(resource.type)) is not None:
        return check(resource)
    where = f"{short(resource)} {resource.name}"
    found = _statement_problems(resource, _wildcard_statements)
    found += [
        f"{where} attaches {arn}, which allows every action on every resource"
        for arn in _attached(resource)
        if _ADMINISTRATOR_ACCESS.match(arn)
    ]
    return [f"{message}: grant only the actions and resources it needs" for message in found]


# --- Secrets Manager --------------------------------------------------------------------------------

_SECRET_SUFFIX = "-??????"
"""What stands for the hyphen and six random characters Secrets Manager appends to a secret's name in its
ARN: `?` matches exactly one character, so the name matches one secret, not every name it prefixes."""
_UNSCOPED_SECRET_ACTIONS = frozenset(
    {"secretsmanager:batchgetsecretvalue", "secretsmanager:getrandompassword", "secretsmanager:listsecrets"}
)
"""The Secrets Manager actions without a resource type, which IAM grants only on `*` (the service
authorization reference for AWS Secrets Manager): they read no secret's value (BatchGetSecretValue needs
GetSecretValue on each secret as well)."""
_WILDCARDS = re.compile(r"[*?]")


def _secret_actions(statement: Mapping[str, Any]) -> list[str]:
    """The statement's actions that reach secrets (by name, by a service or global wildcard)."""
    return [
        action
        for action in strings(statement.get("Action"))
        if action in _EVERY_ACTION
        or (action.lower().startswith("secretsmanager:") and action.lower() not in _UNSCOPED_SECRET_ACTIONS)
    ]


def _secret_pattern(resource: str) -> str | None:
    """Why a Resource entry matches more than one named secret of one account and region, or None."""
    if resource == "*":
        return "every secret"
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[0] != "arn":
        return None
    _, _, service, region, account, rest = parts
    if not fnmatchcase("secretsmanager", service.lower()):
        return None
    if service != "secretsmanager":
        return f"the services {service}, Secrets Manager among them"
    if _WILDCARDS.search(region) or _WILDCARDS.search(account):
        return "secrets of any region or account it matches"
    kind, _, name = rest.partition(":")
    name = name.removesuffix(_SECRET_SUFFIX)
    if kind != "secret" or _WILDCARDS.search(name) or not name:
        return "every secret whose name it matches"
    return None


def _secret_grants(policy: Any) -> Iterator[str]:
    for index, statement in enumerate(items(document(policy).get("Statement"))):
        if str(statement.get("Effect", "")).lower() != "allow":
            continue
        actions = _secret_actions(statement)
        if not actions:
            continue
        sid = statement.get("Sid") or index
        granted = ", ".join(actions)
        if statement.get("NotResource") is not None:
            yield f"statement {sid} allows {granted} on every secret but those it names (NotResource)"
        for resource in strings(statement.get("Resource")):
            if (what := _secret_pattern(resource)) is not None:
                yield f"statement {sid} allows {granted} on {resource}, {what}"


def wildcard_secrets(resource: Resource) -> list[str]:
    return [
        f"{problem}: name each secret by its ARN, with the account and region and the name "
        f"(ending in {_SECRET_SUFFIX} for the suffix Secrets Manager appends)"
        for problem in _statement_problems(resource, _secret_grants)
    ]


# --- EC2: what a role may launch and terminate ------------------------------------------------------


def _grants(statement: Mapping[str, Any], action: str) -> bool:
    """Whether an Allow statement's Action matches `action` (wildcards as IAM reads them, any case)."""
    if str(statement.get("Effect", "")).lower() != "allow":
        return False
    if statement.get("NotAction") is not None:
        return not any(fnmatchcase(action.lower(), a.lower()) for a in strings(statement.get("NotAction")))
    return any(fnmatchcase(action.lower(), a.lower()) for a in strings(statement.get("Action")))


def _condition_keys(statement: Mapping[str, Any]) -> dict[str, list[tuple[str, list[str]]]]:
    """Each condition key (lower case) with the operators and values it is tested with."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for operator, tests in dict(statement.get("Condition") or {}).items():
        for key, values in dict(tests or {}).items():
            found.setdefault(str(key).lower(), []).append((str(operator), strings(values)))
    return found


def _ec2_resources(statement: Mapping[str, Any], kind: str) -> list[str]:
    """The statement's resources that may be EC2 resources of `kind` (`*`, `...:instance/*`, ...)."""
    if statement.get("NotResource") is not None:
        return ["NotResource"]
    found = []
    for resource in strings(statement.get("Resource")):
        parts = resource.split(":", 5)
        if resource == "*" or (
            len(parts) == 6
            and fnmatchcase("ec2", parts[2].lower())
            and fnmatchcase(f"{kind}/i-0", parts[5].replace("?", "*"))
        ):
            found.append(resource)
    return found


def _public_ips_denied(policy: Mapping[str, Any]) -> bool:
    """Whether the document denies RunInstances a network interface with a public address."""
    for statement in items(policy.get("Statement")):
        if str(statement.get("Effect", "")).lower() != "deny":
            continue
        actions = [a.lower() for a in strings(statement.get("Action"))]
        if not any(fnmatchcase("ec2:runinstances", a) for a in actions):
            continue
        for operator, values in _condition_keys(statement).get("ec2:associatepublicipaddress", []):
            if operator.lower().startswith("bool") and [v.lower() for v in values] == ["true"]:
                return True
    return False


def _launch_problems(policy: Any) -> Iterator[str]:
    document_ = document(policy)
    denied = _public_ips_denied(document_)
    for index, statement in enumerate(items(document_.get("Statement"))):
        if not _grants(statement, "ec2:RunInstances"):
            continue
        sid = statement.get("Sid") or index
        keys = _condition_keys(statement)
        resources = strings(statement.get("Resource"))
        # A statement that names launch templates and nothing else grants only their use.
        named = bool(resources) and all(":launch-template/" in r and "*" not in r for r in resources)
        if "ec2:launchtemplate" not in keys and not named:
            yield (
                f"statement {sid} allows ec2:RunInstances without an ec2:LaunchTemplate condition: anything "
                "it launches may take any image, type, subnet or public address the request names"
            )
        public = [
            values
            for operator, values in keys.get("ec2:associatepublicipaddress", [])
            if operator.lower().startswith("bool")
        ]
        if _ec2_resources(statement, "network-interface") and not denied and public != [["false"]]:
            yield (
                f"statement {sid} allows ec2:RunInstances network interfaces without denying public "
                "addresses (no ec2:AssociatePublicIpAddress false condition, no Deny of it true)"
            )


def unscoped_launches(resource: Resource) -> list[str]:
    return [
        f"{problem}: allow RunInstances only with ec2:LaunchTemplate naming your templates, and "
        "deny ec2:AssociatePublicIpAddress true on network-interface"
        for problem in _statement_problems(resource, _launch_problems)
    ]


def _terminate_problems(policy: Any) -> Iterator[str]:
    for index, statement in enumerate(items(document(policy).get("Statement"))):
        if not _grants(statement, "ec2:TerminateInstances"):
            continue
        wide = [r for r in _ec2_resources(statement, "instance") if "*" in r or r == "NotResource"]
        if wide and "ec2:instanceprofile" not in _condition_keys(statement):
            sid = statement.get("Sid") or index
            yield (
                f"statement {sid} allows ec2:TerminateInstances on {', '.join(wide)} without an "
                "ec2:InstanceProfile condition: tags alone are set by anyone who may tag an instance"
            )


def unscoped_terminations(resource: Resource) -> list[str]:
    return [
        f"{problem}: condition it on ec2:InstanceProfile naming your node groups' instance "
        "profiles (only who may pass their roles can attach them), or name the instances"
        for problem in _statement_problems(resource, _terminate_problems)
    ]
