#!/bin/bash
# clusterfab node bootstrap: cluster mega-train, stack dev, node group trainers (gcp).
# Rendered by clusterfab from a template; it runs at every boot and is safe to run again.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
echo "clusterfab bootstrap started $(date -Is)"
export DEBIAN_FRONTEND=noninteractive

# Shared storage: one fstab entry per file system (nofail, so a storage outage never blocks boot).
command -v mount.nfs >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q nfs-common; }
# shared: nfs
mkdir -p /shared
grep -qsE '[[:space:]]/shared[[:space:]]' /etc/fstab \
  || echo '10.255.0.2:/share /shared nfs defaults,_netdev,nofail 0 0' >> /etc/fstab
mountpoint -q /shared || mount /shared

echo "clusterfab bootstrap finished $(date -Is)"
