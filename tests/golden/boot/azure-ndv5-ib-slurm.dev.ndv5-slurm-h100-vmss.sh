#!/bin/bash
# clusterfab node bootstrap: cluster ndv5-slurm, stack dev, h100 (azure).
# Rendered by clusterfab; it runs at every boot and is safe to run again. It installs ansible-core,
# fetches the playbook bundle of the stack revision that launched this node from the cluster bucket,
# configures the node, checks its health and records the verdict (clusterfab-health).
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
export DEBIAN_FRONTEND=noninteractive

readonly BUCKET=ndv5slurmartifac3ea3350e/bootstrap
readonly BUNDLE_KEY=bundles/<bundle-sha256>.tar.gz
readonly BUNDLE_SHA256=<bundle-sha256>
readonly ANSIBLE_CORE=2.19.14
readonly STATE=/var/lib/clusterfab
readonly VENV=/opt/clusterfab/venv
readonly BUNDLE_DIR="/opt/clusterfab/bundles/$BUNDLE_SHA256"
install -d -m 0700 /etc/clusterfab "$STATE"
install -d -m 0755 /opt/clusterfab

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
readonly REGION=southcentralus
readonly STORAGE_ACCOUNT="${BUCKET%%/*}"
readonly CONTAINER="${BUCKET#*/}"
# Azure's instance metadata service answers only requests with the Metadata header, never through a proxy
# (learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
imds() { curl -fsS --noproxy '*' -H 'Metadata: true' "http://169.254.169.254/metadata/$1"; }
# A node's user-assigned identity is its only one, and the metadata service issues its token without a client
# id; a host with a second identity (the Slurm controller, for Microsoft Entra sign-in) names its own in the tag
# clusterfab-identity, whose client id the request then carries
# (learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token).
identity_query() {
  imds 'instance/compute/tagsList?api-version=2021-02-01' | python3 -c '
import json, sys
ids = [t["value"] for t in json.load(sys.stdin) if t["name"] == sys.argv[1]]
print("&client_id=" + ids[0] if ids else "", end="")
' clusterfab-identity
}
storage_token() {
  local identity
  identity=$(identity_query)
  imds "identity/oauth2/token?api-version=2018-02-01&resource=https%3A%2F%2Fstorage.azure.com%2F$identity" \
    | json_field access_token
}
# Blob storage takes the identity's OAuth token on requests of version 2017-11-09 and later.
blob_url() { echo "https://$STORAGE_ACCOUNT.blob.core.windows.net/$1/$2"; }
fetch_bundle() {
  curl -fsS -H "Authorization: Bearer $(storage_token)" -H 'x-ms-version: 2021-08-06' -o "$1" \
    "$(blob_url "$CONTAINER" "$BUNDLE_KEY")"
}
# The verdict is a blob named after the VM in the container clusterfab-health, the one container the node's
# identity may write: an instance's own tags would need rights over its whole scale set.
record_health() {
  local vm
  vm=$(imds 'instance/compute/name?api-version=2021-02-01&format=text') \
    && curl -fsS -X PUT -H "Authorization: Bearer $(storage_token)" -H 'x-ms-version: 2021-08-06' \
      -H 'x-ms-blob-type: BlockBlob' -H 'Content-Type: text/plain' --data-binary "$1" \
      "$(blob_url clusterfab-health "$vm")" \
    || echo "could not record clusterfab-health=$1"
}
echo "clusterfab bootstrap started $(date -Is)"
trap 'record_health failed' ERR

# The node's Ansible inputs, rendered from the blueprint and the catalog.
cat > /etc/clusterfab/node-vars.json <<'CLUSTERFAB_VARS'
{
  "clusterfab_slurm_enabled": true,
  "cuda_toolkit_version": {"__ansible_unsafe": "13.0"},
  "dcgm_cuda_major_version": {"__ansible_unsafe": "13"},
  "dcgm_exporter_version": {"__ansible_unsafe": "4.5.0"},
  "dcgm_node_exporter_version": {"__ansible_unsafe": "1.7.0-1ubuntu0.3"},
  "dcgm_version": {"__ansible_unsafe": "4.4.2"},
  "gdrcopy_checksum": {"__ansible_unsafe": "sha256:c6d5ebb7dabb89d798f27609511735595004da73af28d93ac041bb5290c4cbec"},
  "gdrcopy_enabled": false,
  "gdrcopy_version": {"__ansible_unsafe": "2.5.1"},
  "gpu_node_container_runtime": false,
  "gpu_node_fabric": {"__ansible_unsafe": "infiniband"},
  "gpu_node_nvlink_services": [{"__ansible_unsafe": "fabric_manager"}],
  "gpudirect_storage_enabled": false,
  "gpudirect_storage_nvidia_fs_version": {"__ansible_unsafe": "2.26.6-1"},
  "infiniband_doca_preinstalled": true,
  "infiniband_doca_version": {"__ansible_unsafe": "3.2.3"},
  "infiniband_nccl_env": {"CUDA_DEVICE_ORDER": {"__ansible_unsafe": "PCI_BUS_ID"}, "NCCL_IB_PCI_RELAXED_ORDERING": {"__ansible_unsafe": "1"}, "NCCL_IB_QPS_PER_CONNECTION": {"__ansible_unsafe": "4"}, "NCCL_IGNORE_CPU_AFFINITY": {"__ansible_unsafe": "1"}, "NCCL_MIN_NCHANNELS": {"__ansible_unsafe": "32"}, "NCCL_P2P_NET_CHUNKSIZE": {"__ansible_unsafe": "2097152"}, "NCCL_PXN_DISABLE": {"__ansible_unsafe": "1"}},
  "infiniband_nccl_topo_file": {"__ansible_unsafe": "/opt/microsoft/ndv5-topo.xml"},
  "infiniband_socket_ifname": {"__ansible_unsafe": "eth0"},
  "local_scratch_device_patterns": [{"__ansible_unsafe": "nvme-Microsoft_NVMe_Direct_Disk_*"}],
  "local_scratch_enabled": true,
  "local_scratch_mount_point": {"__ansible_unsafe": "/mnt/localssd"},
  "munge_key_port": 6816,
  "munge_key_server": {"__ansible_unsafe": "10.40.16.10"},
  "munge_key_source": {"__ansible_unsafe": "controller"},
  "nccl_cuda_version": {"__ansible_unsafe": "13.0"},
  "nccl_tests_checksum": {"__ansible_unsafe": "sha256:adbd3d27ba6c00bd7b7cf98cc8811c6ad860427ecd5de59527466b21472c0d93"},
  "nccl_tests_mpi_packages": [{"__ansible_unsafe": "libopenmpi-dev=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "openmpi-bin=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "libopenmpi3t64=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "openmpi-common=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "libpmix2t64=5.0.1-4.1build1"}],
  "nccl_tests_version": {"__ansible_unsafe": "2.19.6"},
  "nccl_version": {"__ansible_unsafe": "2.28.9"},
  "nvidia_driver_open_kernel_modules": true,
  "nvidia_driver_source": {"__ansible_unsafe": "image"},
  "nvidia_driver_version": {"__ansible_unsafe": "580.95.05"},
  "nvidia_fabricmanager_nvlsm": false,
  "nvidia_fabricmanager_version": {"__ansible_unsafe": "580.95.05"},
  "slurm_node_cluster_name": {"__ansible_unsafe": "ndv5-slurm"},
  "slurm_node_conf_server": {"__ansible_unsafe": "10.40.16.10:6817"},
  "slurm_node_gpus": 8,
  "slurm_node_name_source": {"__ansible_unsafe": "azure"},
  "slurm_node_name_tag": {"__ansible_unsafe": "clusterfab-fabric-unit"},
  "slurm_node_packages": [{"__ansible_unsafe": "slurmd"}, {"__ansible_unsafe": "slurm-client"}],
  "slurm_node_spot_watch": true,
  "slurm_node_version": {"__ansible_unsafe": "23.11.4-1.2ubuntu5"},
  "slurm_users_accounts": [{"name": {"__ansible_unsafe": "alice"}, "uid": 40207}, {"name": {"__ansible_unsafe": "bob"}, "uid": 38650}, {"name": {"__ansible_unsafe": "carol"}, "uid": 26302}],
  "storage_mounts_list": [{"fstype": {"__ansible_unsafe": "lustre"}, "mount_point": {"__ansible_unsafe": "/lustre"}, "name": {"__ansible_unsafe": "lustre"}, "options": {"__ansible_unsafe": "noatime,flock"}, "source": {"__ansible_unsafe": "192.0.2.10@tcp:/lustrefs"}}],
  "storage_mounts_lustre_packages": [{"__ansible_unsafe": "amlfs-lustre-client-2.17.0-19-gbb5310f={kernel}"}],
  "storage_mounts_lustre_repo_components": [{"__ansible_unsafe": "main"}],
  "storage_mounts_lustre_repo_key_fingerprint": {"__ansible_unsafe": "BC528686B50D79E339D3721CEB3E94ADBE1229CF"},
  "storage_mounts_lustre_repo_key_url": {"__ansible_unsafe": "https://packages.microsoft.com/keys/microsoft.asc"},
  "storage_mounts_lustre_repo_suite": {"__ansible_unsafe": "noble"},
  "storage_mounts_lustre_repo_url": {"__ansible_unsafe": "https://packages.microsoft.com/repos/amlfs-noble/"}
}
CLUSTERFAB_VARS
cat > /etc/clusterfab/healthcheck-vars.json <<'CLUSTERFAB_VARS'
{
  "gpu_healthcheck_expected_driver_version": {"__ansible_unsafe": ""},
  "gpu_healthcheck_expected_gpu_count": 8,
  "gpu_healthcheck_ib_expected_hcas": 8,
  "gpu_healthcheck_ib_gbps_per_port": 400,
  "gpu_healthcheck_ib_gdr_message_size": 8388608,
  "gpu_healthcheck_ib_min_gdr_gbps": 380.0,
  "gpu_healthcheck_min_busbw_gbps": 3200.0
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
"$VENV/bin/ansible-playbook" -i localhost, -c local gpu_node.yml -e @/etc/clusterfab/node-vars.json

# A new driver (or OFED) needs a reboot; this script runs again afterwards. Once per bundle, so a
# module that will not load cannot make the node reboot forever.
if [ -e /run/reboot-required ] && [ ! -e "$STATE/rebooted-$BUNDLE_SHA256" ]; then
  touch "$STATE/rebooted-$BUNDLE_SHA256"
  echo "clusterfab bootstrap rebooting to load new kernel modules"
  systemctl reboot
  exit 0
fi

# The acceptance check: a failing node is tagged as such; the verdict is /var/lib/clusterfab/gpu-healthcheck.json.
if "$VENV/bin/ansible-playbook" -i localhost, -c local healthcheck.yml -e @/etc/clusterfab/healthcheck-vars.json; then
  record_health passed
else
  record_health failed
fi
echo "clusterfab bootstrap finished $(date -Is)"
