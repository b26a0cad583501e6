#!/bin/bash
# clusterfab node bootstrap: cluster v5p-pretrain, stack dev, node group pretrain (gcp).
# Rendered by clusterfab from a template; it runs at every boot and is safe to run again.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
echo "clusterfab bootstrap started $(date -Is)"
export DEBIAN_FRONTEND=noninteractive

# Shared storage: one fstab entry per file system (nofail, so a storage outage never blocks boot).
command -v mount.nfs >/dev/null 2>&1 || { apt-get update -q && apt-get install -y -q nfs-common; }
# checkpoints: nfs
mkdir -p /checkpoints
grep -qsE '[[:space:]]/checkpoints[[:space:]]' /etc/fstab \
  || echo '10.255.0.2:/share /checkpoints nfs defaults,_netdev,nofail 0 0' >> /etc/fstab
mountpoint -q /checkpoints || mount /checkpoints

echo "clusterfab bootstrap finished $(date -Is)"
