"""The hosts' own accounts, which no team user may be (rule BP143).

Whatever the scheduler, a team's users become Linux accounts (or, where the scheduler logs people in
another way, names that must not collide with the hosts' own): the lists below are facts of the images
and of the packages the roles install, not of one scheduler.
"""

from __future__ import annotations

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
