"""The node software stack as recorded data: every pinned package exists, with its source, and the
catalog's own stacks only name builds that exist.

What a node installs is checked here against facts recorded from outside (PyPI's NCCL wheels, the
vendors' repositories and reference implementations), not against what the roles ask for.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
from typing import Any

import pytest
import yaml

from clusterfab.catalog import at_least, load_catalog, version_tuple
from clusterfab.catalog.refresh.nccl_builds import builds_from_pypi, render
from clusterfab.load import load_bytes
from clusterfab.provision.extravars import gpu_node_vars
from tests.conftest import REPO
from tests.factories import TODAY, blueprint_yaml, example_spec

CATALOG = load_catalog()
# PyPI's JSON answers for NVIDIA's NCCL wheels, recorded verbatim (tests/fixtures/pypi/SOURCES.md).
PYPI = {
    major: json.loads((REPO / f"tests/fixtures/pypi/nvidia-nccl-cu{major}.json").read_text())
    for major in (11, 12, 13)
}
PYPI_CU13 = PYPI[13]


def _pypi_builds(major: int) -> set[tuple[str, int, dt.date]]:
    """The builds one recorded PyPI answer shows, read here on their own terms rather than by the refresher
    under test: a release named x.y.z (not NVIDIA's 0.0.0a0 placeholder, not a .postN re-packaging) with a
    file that is not yanked, dated by the first upload of such a file (PyPI's upload_time is UTC)."""
    builds = set()
    for version, files in PYPI[major]["releases"].items():
        uploads = sorted(f["upload_time_iso_8601"] for f in files if f["yanked"] is False)
        if re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version) and uploads:
            builds.add((version, major, dt.datetime.fromisoformat(uploads[0]).date()))
    return builds


def test_pypi_answer_gives_the_cuda13_builds_with_their_first_upload_date() -> None:
    builds = builds_from_pypi(13, PYPI_CU13)
    # 0.0.0a0 is a placeholder upload, not a release.
    assert [b.nccl for b in builds][:4] == ["2.27.7", "2.28.3", "2.28.7", "2.28.9"]
    assert {b.cuda_major for b in builds} == {13}
    first = builds[0]
    assert (first.nccl, first.released) == ("2.27.7", dt.date(2025, 9, 23))


def test_yanked_and_repackaged_wheels_name_no_build() -> None:
    answer: dict[str, Any] = copy.deepcopy(PYPI_CU13)
    for wheel in answer["releases"]["2.28.3"]:
        wheel["yanked"] = True
    answer["releases"]["2.28.7.post1"] = answer["releases"]["2.28.7"]
    versions = [b.nccl for b in builds_from_pypi(13, answer)]
    assert "2.28.3" not in versions
    assert "2.28.7.post1" not in versions
    assert "2.28.7" in versions


def test_the_shipped_record_is_what_the_refresher_writes() -> None:
    # The data file is the refresher's output for the builds it holds: hand edits would show here.
    text = (REPO / "clusterfab/catalog/data/nccl_builds.yaml").read_text()
    assert render(CATALOG.nccl_builds.builds, CATALOG.nccl_builds.as_of) == text


def test_the_catalogs_nccl_builds_are_the_ones_pypi_answered() -> None:
    """Every build nccl_builds.yaml records, with its CUDA major and date, is one NVIDIA uploaded to PyPI's
    nvidia-nccl-cu<major>, and every such upload is recorded: a build PyPI lacks, a wrong date or a
    missing release fails here, whatever the refresher would write."""
    recorded = {(b.nccl, b.cuda_major, b.released) for b in CATALOG.nccl_builds.builds}
    answered = _pypi_builds(11) | _pypi_builds(12) | _pypi_builds(13)
    assert sorted(recorded - answered) == []
    assert sorted(answered - recorded) == []
    assert len(CATALOG.nccl_builds.builds) == len(recorded) == 51


def test_the_recorded_pypi_answers_are_the_projects_named() -> None:
    # The fixtures answer for the wheels the refresher asks (a swapped file would pair builds and
    # majors wrongly).
    assert {major: answer["info"]["name"] for major, answer in PYPI.items()} == {
        11: "nvidia-nccl-cu11",
        12: "nvidia-nccl-cu12",
        13: "nvidia-nccl-cu13",
    }
    # Written out from the recorded answers: the first and the newest build of each major.
    assert min(_pypi_builds(13)) == ("2.27.7", 13, dt.date(2025, 9, 23))
    assert ("2.32.3", 13, dt.date(2026, 9, 22)) in _pypi_builds(13)
    assert ("2.32.3", 12, dt.date(2026, 9, 22)) in _pypi_builds(12)
    assert ("2.21.5", 11, dt.date(2024, 4, 3)) in _pypi_builds(11)


def test_the_refresher_reads_the_recorded_answers_as_the_test_does() -> None:
    # The refresher (what rewrites nccl_builds.yaml) agrees with the independent reading above.
    for major in (11, 12, 13):
        assert {(b.nccl, b.cuda_major, b.released) for b in builds_from_pypi(major, PYPI[major])} == (
            _pypi_builds(major)
        )


def test_the_ansible_core_the_nodes_install_is_pypis_release() -> None:
    """The nodes install ansible-core from playbooks/requirements/ansible-core.txt, each file named by its
    sha256: those must be the release PyPI answered for (both files, neither yanked)."""
    answer = json.loads((REPO / "tests/fixtures/pypi/ansible-core-2.19.14-excerpt.json").read_text())
    version = CATALOG.node_packages["ansible-core"].version
    files = answer["releases"][version]
    assert answer["info"]["name"] == "ansible-core"
    assert [f["yanked"] for f in files] == [False, False]
    lines = (REPO / "playbooks/requirements/ansible-core.txt").read_text().split("\n")
    start = lines.index(f"ansible-core=={version} \\")
    pinned = []
    for line in lines[start + 1 :]:
        if not line.startswith("    --hash=sha256:"):
            break
        pinned.append(line.split("sha256:")[1].rstrip(" \\"))
    assert sorted(pinned) == sorted(f["digests"]["sha256"] for f in files)


def test_cuda13_builds_start_at_2_27_7() -> None:
    assert "2.27.5" not in CATALOG.nccl_builds.versions_for(13)
    assert CATALOG.nccl_builds.versions_for(13)[0] == "2.27.7"
    assert CATALOG.nccl_builds.majors_of("2.27.5") == [12]


@pytest.mark.parametrize(
    ("cuda", "nccl", "expected"),
    [
        # Audit item 1: the old recommended stack. The first CUDA 13 build is 2.27.7 (PyPI nvidia-nccl-cu13).
        pytest.param(
            "13.0",
            "2.27.5",
            (
                "NCCL 2.27.5 has no build for CUDA 13; it was built for CUDA 12",
                "the nearest NCCL releases built for CUDA 13: 2.27.7",
            ),
            id="2.27.5-cuda13",
        ),
        # A release NVIDIA tagged but never built as a wheel for any CUDA major (nvidia-nccl-cu12 skips it).
        pytest.param(
            "12.8",
            "2.26.3",
            (
                "NCCL 2.26.3 has no build for CUDA 12",
                "the nearest NCCL releases built for CUDA 12: 2.26.2 or 2.26.5",
            ),
            id="2.26.3-cuda12",
        ),
        pytest.param("13.0", "2.27.7", None, id="first-cuda13-build"),
        pytest.param("12.8", "2.27.5", None, id="2.27.5-cuda12"),
    ],
)
def test_an_nccl_without_a_build_for_the_cuda_major_is_refused_with_the_nearest_builds(
    cuda: str, nccl: str, expected: tuple[str, str] | None
) -> None:
    """BP221 names the nearest releases NVIDIA did build for the CUDA major (issue 10, What to build 2)."""
    text = blueprint_yaml(
        node_groups=[{"name": "g", "machine_type": "p5.48xlarge", "count": 2}],
        software={"nvidia_driver": "580.95.05", "cuda": cuda, "nccl": nccl},
    )
    result = load_bytes(text.encode(), "test.yaml", today=TODAY)
    found = [(f.field, f.message, f.hint) for f in result.findings if f.code == "BP221"]
    assert found == ([] if expected is None else [("software.nccl", *expected)])


def test_recommended_nccl_is_built_for_the_recommended_cuda() -> None:
    stack = CATALOG.recommended
    major = int(stack.cuda.split(".")[0])
    assert stack.nccl in CATALOG.nccl_builds.versions_for(major)
    # ...and the CUDA repository carries that build for the toolkit's minor.
    cuda = CATALOG.nccl_package_cuda(stack.nccl, stack.cuda)
    package = CATALOG.apt_package("libnccl2", stack.nccl)
    assert package is not None
    assert package.version == f"{stack.nccl}-1+cuda{cuda}"


def test_every_recorded_nccl_package_is_a_build_pypi_knows() -> None:
    for package in CATALOG.apt_packages:
        if package.name in {"libnccl2", "libnccl-dev"}:
            assert package.version is not None
            upstream, cuda = package.version.split("-1+cuda")
            assert upstream in CATALOG.nccl_builds.versions_for(int(cuda.split(".")[0])), package.version


def test_recorded_cuda_toolkit_runs_on_the_recommended_driver() -> None:
    # The role installs the newest update of the pinned CUDA minor: its minimum driver is the one that counts.
    stack = CATALOG.recommended
    toolkit = CATALOG.apt_package(f"cuda-toolkit-{stack.cuda.replace('.', '-')}")
    assert toolkit is not None
    assert toolkit.upstream_version is not None
    release = CATALOG.min_driver_for_cuda(toolkit.upstream_version)
    assert release is not None
    assert at_least(CATALOG.recommended.nvidia_driver, release.driver)


def test_nccl_tests_build_with_the_recommended_cuda() -> None:
    major = int(CATALOG.recommended.cuda.split(".")[0])
    tests = CATALOG.node_packages["nccl-tests"]
    assert tests.version is not None
    minimum = CATALOG.nccl_tests_support.per_cuda_major[major]
    assert version_tuple(tests.version) >= version_tuple(minimum)
    assert tests.checksum is not None
    assert tests.checksum.startswith("sha256:")


@pytest.mark.parametrize(
    ("nccl", "cuda", "suffix"),
    [
        pytest.param("2.28.9", "13.0", "13.0", id="recorded-minor"),
        pytest.param("2.28.9", "13.0.2", "13.0", id="an-update"),
        # Built for 13.0 only: a 13.1 toolkit takes the 13.0 build of the same major.
        pytest.param("2.28.9", "13.1", "13.0", id="older-minor-of-the-major"),
        # Nothing recorded: the toolkit's own major.minor.
        pytest.param("2.29.2", "13.1", "13.1", id="unrecorded"),
    ],
)
def test_nccl_package_cuda_suffix(nccl: str, cuda: str, suffix: str) -> None:
    assert CATALOG.nccl_package_cuda(nccl, cuda) == suffix


def test_every_package_record_is_sourced_and_in_a_recorded_repository() -> None:
    seen = set()
    for package in CATALOG.apt_packages:
        assert package.repository in CATALOG.apt_repositories, package.name
        assert package.source, package.name
        assert all(s in CATALOG.sources for s in package.source), package.source
        for field in package.unconfirmed:
            assert field in type(package).model_fields, (package.name, field)
        key = (package.repository, package.name, package.version)
        assert key not in seen, key
        seen.add(key)
    for repository in CATALOG.apt_repositories.values():
        assert all(s in CATALOG.sources for s in repository.source), repository.id


def test_depends_name_recorded_packages_or_distribution_ones() -> None:
    # A dependency on a package recorded nowhere (and not one every distribution has) would make the
    # stand-in repository uninstallable, as on a real node.
    recorded = {p.name for p in CATALOG.apt_packages} | {
        provided.split(" ")[0] for p in CATALOG.apt_packages for provided in p.provides
    }
    # In every Debian and Ubuntu base system (Priority: required / important), or the distribution's own.
    distribution = {"adduser", "iptables", "libc6", "libibverbs1"}
    for package in CATALOG.apt_packages:
        for relation in package.depends:
            name = relation.split(" ")[0]
            assert name in recorded | distribution, (package.name, relation)


def test_every_apt_version_the_example_nodes_pin_is_recorded() -> None:
    # The extravars of every example GPU node name packages and versions the catalog records.
    for example in ("aws-p5-efa-fsx", "aws-p6-b200-capacity-block", "gcp-a3mega-tcpxo-filestore"):
        spec = example_spec(example)
        variables = gpu_node_vars(spec, spec.node_groups[0], CATALOG, [])
        nccl = f"{variables['nccl_version']}-1+cuda{variables['nccl_cuda_version']}"
        assert CATALOG.apt_package("libnccl2", variables["nccl_version"]) is not None, example
        assert [p.version for p in CATALOG.apt_packages if p.name == "libnccl2"] == [nccl], example
        dcgm = CATALOG.apt_package("datacenter-gpu-manager-4-core", variables["dcgm_version"])
        assert dcgm is not None, example
        exporter = CATALOG.apt_package("datacenter-gpu-manager-exporter", variables["dcgm_exporter_version"])
        assert exporter is not None, example


# Each role's repository defaults and the catalog repository they must equal. Role defaults are Jinja
# over the node's facts; the catalog writes the same places as {distro} / {arch} / {debarch}, and a node
# runs Ubuntu (the Docker repository's path and suite are the distribution's own).
ROLE_REPOSITORIES = [
    ("nvidia_driver", "nvidia_driver_cuda_repo", "cuda"),
    ("container_runtime", "container_runtime_docker_repo", "docker"),
    ("container_runtime", "container_runtime_nvidia_repo", "nvidia-container-toolkit"),
    ("rdma_gib", "rdma_gib_repo", "gpudirect-gib-apt"),
    ("rdma_gib", "rdma_gib_transport_repo", "artifact-registry-transport"),
    ("gpudirect_tcpxo", "gpudirect_tcpxo_repo", "gpudirect-tcpxo-apt"),
    ("gpudirect_tcpxo", "gpudirect_tcpxo_transport_repo", "artifact-registry-transport"),
]
ROLE_FACTS = {
    "{{ __nvidia_driver_cuda_repo_dir }}": "{distro}/{arch}",
    "{{ __container_runtime_debarch }}": "{debarch}",
    "{{ ansible_facts['distribution'] | lower }}": "ubuntu",
    "{{ ansible_facts['distribution_release'] }}": "noble",
}


def _role_defaults(role: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((REPO / f"playbooks/roles/{role}/defaults/main.yml").read_text())
    return loaded


def _as_catalog(value: Any) -> Any:
    if isinstance(value, str):
        for jinja, placeholder in ROLE_FACTS.items():
            value = value.replace(jinja, placeholder)
    return value


@pytest.mark.parametrize(
    ("role", "prefix", "repository"), ROLE_REPOSITORIES, ids=[r[1] for r in ROLE_REPOSITORIES]
)
def test_role_repository_defaults_are_the_recorded_repositories(
    role: str, prefix: str, repository: str
) -> None:
    # A node trusts a repository's key only when it holds the recorded fingerprint, and installs from the
    # recorded URL and suite: the role defaults carry exactly the catalog's record.
    defaults = {k: _as_catalog(v) for k, v in _role_defaults(role).items()}
    record = CATALOG.apt_repositories[repository]
    assert defaults[f"{prefix}_url"].rstrip("/") == record.url.rstrip("/")
    assert defaults[f"{prefix}_key_url"] == record.key_url
    assert defaults[f"{prefix}_key_fingerprint"] == record.key_fingerprint
    assert defaults.get(f"{prefix}_suite", record.suite) == record.suite
    assert defaults.get(f"{prefix}_components", record.components) == record.components


def test_every_recorded_key_is_pinned_by_a_fingerprint() -> None:
    for repository in CATALOG.apt_repositories.values():
        assert (repository.key_url is None) == (repository.key_fingerprint is None), repository.id
    for client in CATALOG.lustre_clients.values():
        assert client.key_fingerprint, client.cloud
    assert (
        CATALOG.node_packages["efa-installer"].key_fingerprint == "4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC"
    )
