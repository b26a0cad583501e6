#!/bin/bash
# clusterfab node bootstrap: cluster b200-finetune, stack dev, node group gpus (aws).
# Rendered by clusterfab from a template; it runs at every boot and is safe to run again.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
echo "clusterfab bootstrap started $(date -Is)"
export DEBIAN_FRONTEND=noninteractive

# Shared storage: one fstab entry per file system (nofail, so a storage outage never blocks boot).
if ! modinfo lustre >/dev/null 2>&1; then
  install -d -m 0755 /etc/apt/keyrings
  curl -fsSL https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc | gpg --dearmor --yes -o /etc/apt/keyrings/clusterfab-lustre.gpg
  echo "deb [signed-by=/etc/apt/keyrings/clusterfab-lustre.gpg] https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu noble main" \
    > /etc/apt/sources.list.d/clusterfab-lustre.list
  apt-get update -q
  apt-get install -y -q lustre-client-modules-$(uname -r)
fi
# scratch: lustre
mkdir -p /scratch
grep -qsE '[[:space:]]/scratch[[:space:]]' /etc/fstab \
  || echo 'b200-finetune-scratch-fs.fsx.mock@tcp:/mockmnt /scratch lustre relatime,flock,_netdev,nofail 0 0' >> /etc/fstab
mountpoint -q /scratch || mount /scratch

echo "clusterfab bootstrap finished $(date -Is)"
