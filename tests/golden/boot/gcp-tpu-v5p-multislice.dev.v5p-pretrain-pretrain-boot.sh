#!/bin/bash
# clusterfab node bootstrap: cluster v5p-pretrain, stack dev, pretrain (gcp).
# Rendered by clusterfab; it runs at every boot and is safe to run again. It installs ansible-core,
# fetches the playbook bundle of the stack revision that launched this node from the cluster bucket,
# configures the node, checks its health and records the verdict (clusterfab-health).
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
export DEBIAN_FRONTEND=noninteractive

readonly BUCKET=v5p-pretrain-artifacts-bucket
readonly BUNDLE_KEY=bundles/<bundle-sha256>.tar.gz
readonly BUNDLE_SHA256=<bundle-sha256>
readonly ANSIBLE_CORE=2.19.14
readonly STATE=/var/lib/clusterfab
readonly VENV=/opt/clusterfab/venv
readonly BUNDLE_DIR="/opt/clusterfab/bundles/$BUNDLE_SHA256"
install -d -m 0700 /etc/clusterfab "$STATE"
install -d -m 0755 /opt/clusterfab

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
metadata() { curl -fsS -H 'Metadata-Flavor: Google' "http://metadata.google.internal/computeMetadata/v1/$1"; }
fetch_bundle() {
  local token object
  token=$(metadata instance/service-accounts/default/token | json_field access_token)
  object=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$BUNDLE_KEY")
  curl -fsS -H "Authorization: Bearer $token" -o "$1" \
    "https://storage.googleapis.com/storage/v1/b/$BUCKET/o/$object?alt=media"
}
# Guest attributes need no IAM: the node writes them through its own metadata server.
record_health() {
  curl -fsS -X PUT -H 'Metadata-Flavor: Google' --data "$1" \
    http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes/clusterfab/health \
    || echo "could not record clusterfab/health=$1"
}
echo "clusterfab bootstrap started $(date -Is)"
trap 'record_health failed' ERR

# The node's Ansible inputs, rendered from the blueprint and the catalog.
cat > /etc/clusterfab/node-vars.json <<'CLUSTERFAB_VARS'
{
  "clusterfab_monitoring_enabled": false,
  "storage_mounts_list": [{"fstype": {"__ansible_unsafe": "nfs"}, "mount_point": {"__ansible_unsafe": "/checkpoints"}, "name": {"__ansible_unsafe": "checkpoints"}, "options": {"__ansible_unsafe": "defaults"}, "source": {"__ansible_unsafe": "10.255.0.2:/share"}}]
}
CLUSTERFAB_VARS
chmod 0600 /etc/clusterfab/*.json

# The playbooks of the stack revision that launched this node, checked against their digest.
if [ ! -e "$BUNDLE_DIR/.complete" ]; then
  download=$(mktemp)
  fetch_bundle "$download"
  echo "$BUNDLE_SHA256  $download" | sha256sum --check --status
  rm -rf "$BUNDLE_DIR"
  install -d -m 0755 "$BUNDLE_DIR"
  tar -xzf "$download" -C "$BUNDLE_DIR"
  rm -f "$download"
  touch "$BUNDLE_DIR/.complete"
fi

# A pinned ansible-core in its own venv, so the node's Python packages stay untouched: wheels only, each
# named by its sha256 in the bundle's requirements (the bundle itself is checked against its digest).
if [ "$(cat "$VENV/.ansible-core" 2>/dev/null || true)" != "$ANSIBLE_CORE" ]; then
  if ! python3 -m venv --clear "$VENV"; then
    apt-get update -q
    apt-get install -y -q python3-venv
    python3 -m venv --clear "$VENV"
  fi
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --require-hashes --only-binary :all: \
    -r "$BUNDLE_DIR/requirements/ansible-core.txt"
  echo "$ANSIBLE_CORE" > "$VENV/.ansible-core"
fi

cd "$BUNDLE_DIR"
"$VENV/bin/ansible-playbook" -i localhost, -c local tpu_host.yml -e @/etc/clusterfab/node-vars.json

# A new driver (or OFED) needs a reboot; this script runs again afterwards. Once per bundle, so a
# module that will not load cannot make the node reboot forever.
if [ -e /run/reboot-required ] && [ ! -e "$STATE/rebooted-$BUNDLE_SHA256" ]; then
  touch "$STATE/rebooted-$BUNDLE_SHA256"
  echo "clusterfab bootstrap rebooting to load new kernel modules"
  systemctl reboot
  exit 0
fi
record_health configured
echo "clusterfab bootstrap finished $(date -Is)"
