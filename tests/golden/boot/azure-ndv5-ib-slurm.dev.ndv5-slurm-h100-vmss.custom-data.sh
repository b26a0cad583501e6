#!/bin/bash
# clusterfab: ndv5-slurm/h100 (dev). Azure runs a VM's custom data once, through
# cloud-init, and never lets it change; its user data changes in place and the metadata service serves the
# current copy (learn.microsoft.com/azure/virtual-machines/user-data). So this launcher is the custom data:
# it stays a per-boot script and runs the host's boot script, its user data, at every boot. A change of the
# boot script (the file systems' addresses, the playbook bundle) changes only the user data, which never
# recreates the scale set's instances.
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
readonly PER_BOOT=/var/lib/cloud/scripts/per-boot/clusterfab-launch.sh
if [ "$(readlink -f "$0")" != "$PER_BOOT" ]; then
  install -D -m 0700 "$0" "$PER_BOOT"
fi
install -d -m 0700 /var/lib/clusterfab
curl -fsS --retry 10 --retry-connrefused --noproxy '*' -H 'Metadata: true' \
  'http://169.254.169.254/metadata/instance/compute/userData?api-version=2021-01-01&format=text' \
  | base64 -d >/var/lib/clusterfab/boot.sh
chmod 0700 /var/lib/clusterfab/boot.sh
exec /bin/bash /var/lib/clusterfab/boot.sh
