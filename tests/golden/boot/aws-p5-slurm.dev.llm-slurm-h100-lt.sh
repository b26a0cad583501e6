#!/bin/bash
# clusterfab node bootstrap: cluster llm-slurm, stack dev, h100 (aws).
# Rendered by clusterfab; it runs at every boot and is safe to run again. It installs ansible-core,
# fetches the playbook bundle of the stack revision that launched this node from the cluster bucket,
# configures the node, checks its health and records the verdict (clusterfab-health).
set -euo pipefail
exec >>/var/log/clusterfab-bootstrap.log 2>&1
export DEBIAN_FRONTEND=noninteractive

readonly BUCKET=llm-slurm-artifacts-bucket-mock
readonly BUNDLE_KEY=bundles/<bundle-sha256>.tar.gz
readonly BUNDLE_SHA256=<bundle-sha256>
readonly ANSIBLE_CORE=2.19.14
readonly STATE=/var/lib/clusterfab
readonly VENV=/opt/clusterfab/venv
readonly BUNDLE_DIR="/opt/clusterfab/bundles/$BUNDLE_SHA256"
install -d -m 0700 /etc/clusterfab "$STATE"
install -d -m 0755 /opt/clusterfab

json_field() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
readonly REGION=us-east-1
# cloud-init runs user data once per instance; this copy runs at every later boot (after the driver's
# reboot, after a stop and start), as a GCP startup script does.
readonly PER_BOOT=/var/lib/cloud/scripts/per-boot/clusterfab-bootstrap.sh
if [ "$(readlink -f "$0")" != "$PER_BOOT" ]; then
  install -D -m 0700 "$0" "$PER_BOOT"
fi
imds() {
  local token
  token=$(curl -fsS -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 300' http://169.254.169.254/latest/api/token)
  curl -fsS -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/$1"
}
# curl signs AWS requests itself (SigV4) with the instance role's credentials: no SDK on the node.
aws_curl() {
  local service=$1 role creds
  shift
  role=$(imds meta-data/iam/security-credentials/)
  creds=$(imds "meta-data/iam/security-credentials/$role")
  curl -fsS --aws-sigv4 "aws:amz:$REGION:$service" \
    --user "$(json_field AccessKeyId <<<"$creds"):$(json_field SecretAccessKey <<<"$creds")" \
    -H "x-amz-security-token: $(json_field Token <<<"$creds")" "$@"
}
fetch_bundle() { aws_curl s3 -o "$1" "https://$BUCKET.s3.$REGION.amazonaws.com/$BUNDLE_KEY"; }
record_health() {
  local id
  id=$(imds meta-data/instance-id)
  aws_curl ec2 -o /dev/null \
    "https://ec2.$REGION.amazonaws.com/?Action=CreateTags&Version=2016-11-15&ResourceId.1=$id&Tag.1.Key=clusterfab-health&Tag.1.Value=$1" \
    || echo "could not record clusterfab-health=$1"
}
echo "clusterfab bootstrap started $(date -Is)"
trap 'record_health failed' ERR

# The node's Ansible inputs, rendered from the blueprint and the catalog.
cat > /etc/clusterfab/node-vars.json <<'CLUSTERFAB_VARS'
{
  "clusterfab_pyxis_enabled": true,
  "clusterfab_slurm_enabled": true,
  "container_runtime_docker": false,
  "container_runtime_nvidia_toolkit_version": {"__ansible_unsafe": "1.19.1-1"},
  "cuda_toolkit_version": {"__ansible_unsafe": "13.0"},
  "dcgm_cuda_major_version": {"__ansible_unsafe": "13"},
  "dcgm_exporter_version": {"__ansible_unsafe": "4.5.0"},
  "dcgm_node_exporter_version": {"__ansible_unsafe": "1.7.0-1ubuntu0.3"},
  "dcgm_version": {"__ansible_unsafe": "4.4.2"},
  "efa_installer_key_fingerprint": {"__ansible_unsafe": "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"},
  "efa_installer_version": {"__ansible_unsafe": "1.51.0"},
  "gdrcopy_checksum": {"__ansible_unsafe": "sha256:c6d5ebb7dabb89d798f27609511735595004da73af28d93ac041bb5290c4cbec"},
  "gdrcopy_enabled": true,
  "gdrcopy_version": {"__ansible_unsafe": "2.5.1"},
  "gpu_node_container_runtime": true,
  "gpu_node_fabric": {"__ansible_unsafe": "efa"},
  "gpu_node_nvlink_services": [{"__ansible_unsafe": "fabric_manager"}],
  "gpudirect_storage_enabled": true,
  "gpudirect_storage_nvidia_fs_version": {"__ansible_unsafe": "2.26.6-1"},
  "local_scratch_device_patterns": [{"__ansible_unsafe": "nvme-Amazon_EC2_NVMe_Instance_Storage_*"}],
  "local_scratch_enabled": true,
  "local_scratch_mount_point": {"__ansible_unsafe": "/mnt/localssd"},
  "munge_key_port": 6816,
  "munge_key_server": {"__ansible_unsafe": "10.30.0.10"},
  "munge_key_source": {"__ansible_unsafe": "controller"},
  "nccl_cuda_version": {"__ansible_unsafe": "13.0"},
  "nccl_tests_checksum": {"__ansible_unsafe": "sha256:adbd3d27ba6c00bd7b7cf98cc8811c6ad860427ecd5de59527466b21472c0d93"},
  "nccl_tests_mpi_packages": [{"__ansible_unsafe": "libopenmpi-dev=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "openmpi-bin=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "libopenmpi3t64=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "openmpi-common=4.1.6-7ubuntu2"}, {"__ansible_unsafe": "libpmix2t64=5.0.1-4.1build1"}],
  "nccl_tests_version": {"__ansible_unsafe": "2.19.6"},
  "nccl_version": {"__ansible_unsafe": "2.28.9"},
  "nvidia_driver_open_kernel_modules": true,
  "nvidia_driver_source": {"__ansible_unsafe": "cuda_repository"},
  "nvidia_driver_version": {"__ansible_unsafe": "580.95.05"},
  "nvidia_fabricmanager_nvlsm": false,
  "nvidia_fabricmanager_version": {"__ansible_unsafe": "580.95.05"},
  "pyxis_checksum": {"__ansible_unsafe": "sha256:9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4"},
  "pyxis_enroot": true,
  "pyxis_enroot_cache_dir": {"__ansible_unsafe": "/mnt/localssd/enroot/cache"},
  "pyxis_enroot_checksum": {"__ansible_unsafe": "sha256:9f8c589bf2537cf5ac042358c49b3f203b5c8ed8dc646010719eb728d76da4ac"},
  "pyxis_enroot_data_dir": {"__ansible_unsafe": "/mnt/localssd/enroot/data"},
  "pyxis_enroot_kernel_headers_checksum": {"__ansible_unsafe": "sha256:2806e2d689c6affb45ff8761a1011e6ab8a39369a617421fbff9c29f6dbefec6"},
  "pyxis_enroot_kernel_headers_url": {"__ansible_unsafe": "https://github.com/sabotage-linux/kernel-headers/archive/refs/tags/v4.19.88-1.tar.gz"},
  "pyxis_enroot_makeself_checksum": {"__ansible_unsafe": "sha256:91deafdbfddf130abe67d7546f0c50be6af6711bb1c351b768043bd527bd6e45"},
  "pyxis_enroot_makeself_url": {"__ansible_unsafe": "https://github.com/megastep/makeself/archive/refs/tags/release-2.4.5.tar.gz"},
  "pyxis_enroot_url": {"__ansible_unsafe": "https://github.com/NVIDIA/enroot/archive/refs/tags/v4.1.2.tar.gz"},
  "pyxis_enroot_version": {"__ansible_unsafe": "4.1.2"},
  "pyxis_restart_slurmd": true,
  "pyxis_slurm_dev_package": {"__ansible_unsafe": "libslurm-dev"},
  "pyxis_slurm_version": {"__ansible_unsafe": "23.11.4-1.2ubuntu5"},
  "pyxis_url": {"__ansible_unsafe": "https://github.com/NVIDIA/pyxis/archive/refs/tags/v0.24.0.tar.gz"},
  "pyxis_version": {"__ansible_unsafe": "0.24.0"},
  "slurm_node_conf_server": {"__ansible_unsafe": "10.30.0.10:6817"},
  "slurm_node_gpus": 8,
  "slurm_node_name_source": {"__ansible_unsafe": "aws"},
  "slurm_node_packages": [{"__ansible_unsafe": "slurmd"}, {"__ansible_unsafe": "slurm-client"}],
  "slurm_node_spot_watch": false,
  "slurm_node_version": {"__ansible_unsafe": "23.11.4-1.2ubuntu5"},
  "slurm_users_accounts": [{"name": {"__ansible_unsafe": "alice"}, "uid": 40207}, {"name": {"__ansible_unsafe": "bob"}, "uid": 38650}, {"name": {"__ansible_unsafe": "carol"}, "uid": 26302}, {"name": {"__ansible_unsafe": "dave"}, "uid": 46851}],
  "storage_mounts_list": [{"fstype": {"__ansible_unsafe": "lustre"}, "mount_point": {"__ansible_unsafe": "/lustre"}, "name": {"__ansible_unsafe": "shared"}, "options": {"__ansible_unsafe": "relatime,flock"}, "source": {"__ansible_unsafe": "llm-slurm-shared-fs.fsx.mock@tcp:/mockmnt"}}],
  "storage_mounts_lustre_packages": [{"__ansible_unsafe": "lustre-client-modules-{kernel}"}],
  "storage_mounts_lustre_repo_components": [{"__ansible_unsafe": "main"}],
  "storage_mounts_lustre_repo_key_fingerprint": {"__ansible_unsafe": "9C36DD9C515F10DBC3AA835C5D5CCC3383A962E1"},
  "storage_mounts_lustre_repo_key_url": {"__ansible_unsafe": "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"},
  "storage_mounts_lustre_repo_suite": {"__ansible_unsafe": "noble"},
  "storage_mounts_lustre_repo_url": {"__ansible_unsafe": "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"}
}
CLUSTERFAB_VARS
cat > /etc/clusterfab/healthcheck-vars.json <<'CLUSTERFAB_VARS'
{
  "gpu_healthcheck_expected_driver_version": {"__ansible_unsafe": "580.95.05"},
  "gpu_healthcheck_expected_gpu_count": 8,
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
