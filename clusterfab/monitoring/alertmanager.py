"""Alertmanager's configuration: critical and warning alerts e-mailed to the cluster's alert recipients,
info alerts kept in the UI; a node that is down silences the alerts that follow from it.

The SMTP password never appears in the file: Alertmanager reads it from `SMTP_PASSWORD_FILE`, which the
monitoring host fills from the cloud's secret store at boot.
"""

from __future__ import annotations

from typing import Any

from clusterfab.spec import Monitoring

SMTP_PASSWORD_FILE = "/etc/prometheus/alertmanager-smtp-password"
EMAIL = "email"
NOBODY = "nobody"


def alertmanager_config(monitoring: Monitoring, *, cluster: str, stack: str) -> dict[str, Any]:
    mailing = bool(monitoring.alert_emails) and monitoring.smtp is not None
    config: dict[str, Any] = {}
    smtp = monitoring.smtp
    if mailing and smtp is not None:
        config["global"] = {
            "smtp_smarthost": smtp.smarthost,
            "smtp_from": smtp.sender,
            "smtp_require_tls": True,
        }
        if smtp.username is not None:
            config["global"]["smtp_auth_username"] = smtp.username
        if smtp.password_secret is not None:
            config["global"]["smtp_auth_password_file"] = SMTP_PASSWORD_FILE
    default = EMAIL if mailing else NOBODY
    config["route"] = {
        "receiver": default,
        "group_by": ["alertname", "instance"],
        "group_wait": "30s",
        "group_interval": "5m",
        "repeat_interval": "4h",
        "routes": [{"matchers": ['severity="info"'], "receiver": NOBODY}],
    }
    receivers: list[dict[str, Any]] = [{"name": NOBODY}]
    if mailing:
        receivers.append(
            {
                "name": EMAIL,
                "email_configs": [
                    {
                        "to": ", ".join(monitoring.alert_emails),
                        "send_resolved": True,
                        "headers": {
                            "Subject": f"[{cluster}/{stack}] {{{{ .CommonLabels.alertname }}}} "
                            "({{ .Status }})"
                        },
                    }
                ],
            }
        )
    config["receivers"] = receivers
    # A node that is down explains its exporter and GPUs going silent: one e-mail, not three.
    config["inhibit_rules"] = [
        {
            "source_matchers": ['alertname="NodeDown"'],
            "target_matchers": ['alertname=~"DcgmExporterDown|GpuMissing"'],
            "equal": ["instance"],
        }
    ]
    return config
