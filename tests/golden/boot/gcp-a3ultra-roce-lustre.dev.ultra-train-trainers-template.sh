#!/bin/bash
# clusterfab node bootstrap: cluster ultra-train, stack dev, node group trainers (gcp).
# Rendered by clusterfab from a template; it runs at every boot and is safe to run again.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
echo "clusterfab bootstrap started $(date -Is)"
export DEBIAN_FRONTEND=noninteractive

# Shared storage: one fstab entry per file system (nofail, so a storage outage never blocks boot).
if ! modinfo lustre >/dev/null 2>&1; then
  install -d -m 0755 /etc/apt/keyrings
  curl -fsSL https://us-apt.pkg.dev/doc/repo-signing-key.gpg | gpg --dearmor --yes -o /etc/apt/keyrings/clusterfab-lustre.gpg
  echo "deb [signed-by=/etc/apt/keyrings/clusterfab-lustre.gpg] https://us-apt.pkg.dev/projects/lustre-client-binaries lustre-client-ubuntu-noble main" \
    > /etc/apt/sources.list.d/clusterfab-lustre.list
  apt-get update -q
  apt-get install -y -q lustre-client-modules-$(uname -r) lustre-client-utils
fi
# lustre: lustre
mkdir -p /lustre
grep -qsE '[[:space:]]/lustre[[:space:]]' /etc/fstab \
  || echo '10.255.0.3@tcp:/mocklfs /lustre lustre defaults,_netdev,nofail 0 0' >> /etc/fstab
mountpoint -q /lustre || mount /lustre

echo "clusterfab bootstrap finished $(date -Is)"
