"""The cluster's Linux accounts for the teams' users: one name, one uid on every host.

Slurm runs a job's tasks as the submitting user's numeric uid on every node it allocates, and munge
credentials carry that uid: a user must have the same uid on the login nodes, the controller and every
GPU node, or their job fails (or runs as somebody else). The cloud images have no directory service, so
the uid is derived from the name alone (every host computes the same one with no shared state) in a
range no distribution or cloud agent allocates from (Ubuntu's adduser: 1000-59999 by default, here
20000-49999 with collisions settled in name order).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

FIRST_UID = 20000
UID_SPAN = 30000


def user_ids(names: Iterable[str]) -> dict[str, int]:
    """Each user's uid (and the gid of their own group), stable for a name whatever else changes,
    unless two names hash alike: then the later name (sorted) takes the next free uid."""
    taken: set[int] = set()
    ids: dict[str, int] = {}
    for name in sorted(set(names)):
        offset = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % UID_SPAN
        while FIRST_UID + offset in taken:
            offset = (offset + 1) % UID_SPAN
        taken.add(FIRST_UID + offset)
        ids[name] = FIRST_UID + offset
    return ids


# Accounts a team user may not be: the role (playbooks/roles/slurm_users) creates each user with its own uid
# and a private group of the same name, so a name the hosts already have would take over that account or
# group (root's uid changed; a user named `sudo` or `admin` made a member of the sudoers' group) or break
# the service that runs as it. Collected from:
BASE_PASSWD = (
    # Debian's base-passwd master files, /usr/share/base-passwd/passwd.master and group.master (base-passwd
    # 3.6, as Debian 12 and 13 and Ubuntu 24.04 ship it), and gnats, which its older releases had and
    # upgraded images keep.
    *("root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy"),
    *("www-data", "backup", "list", "irc", "gnats", "_apt", "nobody"),
    *("adm", "tty", "disk", "kmem", "dialout", "fax", "voice", "cdrom", "floppy", "tape", "sudo", "audio"),
    *("dip", "operator", "src", "shadow", "utmp", "video", "sasl", "plugdev", "staff", "users", "nogroup"),
)
IMAGE_ACCOUNTS = (
    # The default users of the images the stacks boot (Ubuntu's `ubuntu`; Debian's cloud images' `admin`,
    # also the group Ubuntu's /etc/sudoers grants sudo to), and the accounts their preinstalled packages
    # create (systemd's sysusers.d: systemd-network, -resolve, -timesync, -coredump, -journal; dbus:
    # messagebus; rsyslog: syslog; openssh-server: sshd, _ssh; uuid-runtime: uuidd; tcpdump; tpm-udev: tss;
    # landscape-common: landscape; fwupd: fwupd-refresh; usbmuxd: usbmux; pollinate; polkitd; dnsmasq-base:
    # dnsmasq; dhcpcd-base: dhcpcd; chrony: _chrony; snapd: snap_daemon; lxd, netdev, input, render, kvm,
    # sgx, crontab, ssl-cert: groups of udev, cron, ssl-cert and the image's own setup; docker: root's
    # equal wherever Docker is added).
    *("ubuntu", "admin", "messagebus", "syslog", "sshd", "_ssh", "uuidd", "tcpdump", "tss", "landscape"),
    *("fwupd-refresh", "usbmux", "pollinate", "polkitd", "dnsmasq", "dhcpcd", "_chrony", "snap_daemon"),
    *("lxd", "netdev", "input", "render", "kvm", "sgx", "crontab", "ssl-cert", "docker"),
    # The clouds' agents: AWS Systems Manager's session user and EC2 Instance Connect's; on GCE the guest
    # agent's sudo group google-sudoers (and OS Login's, below among the google- names).
    *("ssm-user", "ec2-instance-connect"),
)
ROLE_ACCOUNTS = (
    # What the packages our roles install run as: slurm (the Slurm packages' SlurmUser), munge, mysql
    # (mariadb-server, the embedded accounting database), prometheus (prometheus, its node exporter and
    # alertmanager), grafana, statd and _rpc (nfs-common and rpcbind, for Filestore mounts).
    *("slurm", "munge", "mysql", "prometheus", "grafana", "statd", "_rpc"),
)
SYSTEM_ACCOUNTS = frozenset(BASE_PASSWD + IMAGE_ACCOUNTS + ROLE_ACCOUNTS)
SYSTEM_ACCOUNT_PREFIXES = ("systemd-", "nvidia-", "google-", "_")
"""Families of system accounts: systemd's own, NVIDIA's driver and fabric daemons' (nvidia-persistenced
and whatever a driver branch adds), the GCE guest environment's (google-sudoers and OS Login's groups), and
Debian's newer system accounts, which begin with an underscore (_apt, _chrony, _rpc, _ssh)."""


def system_account(name: str) -> str | None:
    """What makes `name` a system account of the cluster's hosts (the name or its family's prefix), or None
    when a team user may take it."""
    if name in SYSTEM_ACCOUNTS:
        return name
    return next((p for p in SYSTEM_ACCOUNT_PREFIXES if name.startswith(p)), None)
