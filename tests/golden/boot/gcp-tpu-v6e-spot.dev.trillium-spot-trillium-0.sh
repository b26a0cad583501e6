#!/bin/bash
# clusterfab node bootstrap: cluster trillium-spot, stack dev, node group trillium (gcp).
# Rendered by clusterfab from a template; it runs at every boot and is safe to run again.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
echo "clusterfab bootstrap started $(date -Is)"
export DEBIAN_FRONTEND=noninteractive

echo "clusterfab bootstrap finished $(date -Is)"
