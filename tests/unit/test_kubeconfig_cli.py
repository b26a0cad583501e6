"""`clusterfab kubeconfig --stack S [--out FILE]`: the kubeconfig of a stack's GKE or EKS cluster, written
from its recorded outputs, to stdout or a file only its owner reads; a stack without a Kubernetes cluster
exits 1 with the reason."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from clusterfab import cli
from clusterfab.cli import live

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


def _outputs(cloud: str, scheduler: dict[str, Any] | None) -> dict[str, Any]:
    zone, region = ("use1-az6", "us-east-1") if cloud == "aws" else ("us-central1-a", "us-central1")
    return {
        "blueprint": {"name": "llm", "file": "bp.yaml", "digest": "0" * 64, "bundle_sha256": "1" * 64,
                      "environment": "prod", "catalog_version": "x", "cloud": cloud, "region": region,
                      "zone": zone, "project": "p-123456" if cloud == "gcp" else None},
        "network": {}, "bucket": "b", "node_selector": {}, "scheduler": scheduler,
    }  # fmt: skip


GKE = {"kind": "kubernetes", "controller": "llm-prod", "controller_address": "10.0.0.2", "login": [],
       "service": "GKE", "location": "us-central1", "version": "1.35",
       "certificate_authority": CA}  # fmt: skip
EKS = {"kind": "kubernetes", "controller": "llm-prod",
       "controller_address": "https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com", "login": [],
       "service": "EKS", "location": "us-east-1", "version": "1.35", "certificate_authority": CA}  # fmt: skip

GKE_KUBECONFIG = f"""\
# Written by clusterfab kubeconfig for stack prod; the token comes from gke-gcloud-auth-plugin at each use.
apiVersion: v1
kind: Config
clusters:
- name: llm-prod
  cluster:
    server: https://10.0.0.2
    certificate-authority-data: {CA}
users:
- name: llm-prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: gke-gcloud-auth-plugin
      args: []
      installHint: 'Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin (https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl)'
      provideClusterInfo: false
      interactiveMode: IfAvailable
contexts:
- name: llm-prod
  context:
    cluster: llm-prod
    user: llm-prod
current-context: llm-prod
"""

EKS_KUBECONFIG = f"""\
# Written by clusterfab kubeconfig for stack prod; the token comes from aws at each use.
apiVersion: v1
kind: Config
clusters:
- name: llm-prod
  cluster:
    server: https://0123456789ABCDEF.gr7.us-east-1.eks.amazonaws.com
    certificate-authority-data: {CA}
users:
- name: llm-prod
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: aws
      args:
      - --region
      - us-east-1
      - eks
      - get-token
      - --cluster-name
      - llm-prod
      - --output
      - json
      installHint: 'Install the AWS CLI v2: https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html'
      provideClusterInfo: false
      interactiveMode: IfAvailable
contexts:
- name: llm-prod
  context:
    cluster: llm-prod
    user: llm-prod
current-context: llm-prod
"""


def _cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], outputs: dict[str, Any], *args: str
) -> tuple[int, str, str]:
    """Run `clusterfab kubeconfig --stack prod ARGS` in this process with the stack's outputs given."""
    project = SimpleNamespace(stack=lambda name: SimpleNamespace(outputs=lambda: outputs))
    monkeypatch.setattr(live, "deploy_project", lambda: project)
    monkeypatch.setattr(sys, "argv", ["clusterfab", "kubeconfig", "--stack", "prod", *args])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.parametrize(
    ("cloud", "scheduler", "text"), [("gcp", GKE, GKE_KUBECONFIG), ("aws", EKS, EKS_KUBECONFIG)]
)
def test_the_kubeconfig_goes_to_stdout(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    cloud: str,
    scheduler: dict[str, Any],
    text: str,
) -> None:
    assert _cli(monkeypatch, capsys, _outputs(cloud, scheduler)) == (0, text, "")


def test_out_writes_a_file_only_its_owner_reads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text("old", "utf-8")
    path.chmod(0o644)
    code, out, err = _cli(monkeypatch, capsys, _outputs("aws", EKS), "--out", str(path))
    assert (code, out, err) == (0, "", f"wrote {path}\n")
    assert path.read_text("utf-8") == EKS_KUBECONFIG
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


SLURM = {"kind": "slurm", "controller": "i-0c0ffee", "controller_address": "10.0.0.10", "login": [],
         "munge_secret": "arn:aws:secretsmanager:us-east-1:1:secret:m"}  # fmt: skip


@pytest.mark.parametrize(
    ("scheduler", "has"),
    [(SLURM, "a slurm scheduler"), (None, "no scheduler")],
)
def test_a_stack_without_a_kubernetes_cluster_exits_1(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], scheduler: Any, has: str
) -> None:
    assert _cli(monkeypatch, capsys, _outputs("aws", scheduler)) == (
        1,
        "",
        f"error: stack prod has {has}, not a Kubernetes cluster: there is no kubeconfig to write\n",
    )


def test_kubernetes_outputs_without_their_cluster_fields_are_not_clusterfabs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    partial = {k: v for k, v in GKE.items() if k != "certificate_authority"}
    code, out, err = _cli(monkeypatch, capsys, _outputs("gcp", partial))
    assert (code, out) == (2, "")
    assert err == (
        "error: the stack's outputs are not clusterfab's (scheduler.certificate_authority: Field required); "
        "run `clusterfab up` for it first\n"
    )


def test_an_unwritable_file_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "missing" / "kubeconfig"
    code, out, err = _cli(monkeypatch, capsys, _outputs("gcp", GKE), "--out", str(path))
    assert (code, out, err) == (2, "", f"error: cannot write {path}: No such file or directory\n")
