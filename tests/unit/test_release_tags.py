"""Release lists, tags and images the catalog pins, held to the vendors' own git repositories.

releases.yaml lists every NVIDIA driver and NCCL release (validate warns about a version not listed, BP214),
the nodes build nccl-tests, GDRCopy, enroot and pyxis from GitHub's archives of release tags,
dcgm-exporter's counters were read at one of its tags, and GCP nodes boot the Cluster Toolkit's images.
Each is compared here with a recorded `git ls-remote` answer or blueprint lines of the vendor's repository
(tests/fixtures/github/SOURCES.md), read by this test on its own: a release the vendor never tagged, a
missing one, or a commit the tag does not name fails.
"""

from __future__ import annotations

import re

import pytest

from clusterfab.catalog import load_catalog
from tests.conftest import REPO

CATALOG = load_catalog()
REFS = REPO / "tests/fixtures/github"


def tag_commits(repository: str) -> dict[str, str]:
    """Tag name -> the commit it names, from a recorded ls-remote answer (an annotated tag's peeled line)."""
    commits: dict[str, str] = {}
    for line in (REFS / f"{repository}.tags").read_text().splitlines():
        sha, ref = line.split("\t")
        name = ref.removeprefix("refs/tags/")
        if name.endswith("^{}"):
            commits[name.removesuffix("^{}")] = sha
        else:
            commits.setdefault(name, sha)
    return commits


def _by_version(versions: set[str]) -> list[str]:
    return sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def test_driver_releases_are_the_open_kernel_module_tags() -> None:
    # NVIDIA tags open-gpu-kernel-modules with every Linux driver release: the tags are the versions.
    tags = set(tag_commits("NVIDIA-open-gpu-kernel-modules"))
    assert len(tags) == 193
    assert list(CATALOG.releases["nvidia_driver"].versions) == _by_version(tags)


def test_nccl_releases_are_the_nccl_release_tags() -> None:
    # vX.Y.Z-N release tags, without the package revision; the 1.2.x +cudaX.Y tags, nccl4py-*, nccl-ep-* and
    # inc_nsteps_v2.16 name no NCCL release of this form.
    tags = tag_commits("NVIDIA-nccl")
    releases = {m.group(1) for t in tags if (m := re.fullmatch(r"v([0-9]+\.[0-9]+\.[0-9]+)-[0-9]+", t))}
    assert len(tags) == 78
    assert list(CATALOG.releases["nccl"].versions) == _by_version(releases)


def test_the_recommended_stack_names_released_versions() -> None:
    assert CATALOG.recommended.nvidia_driver in tag_commits("NVIDIA-open-gpu-kernel-modules")
    assert f"v{CATALOG.recommended.nccl}-1" in tag_commits("NVIDIA-nccl")


@pytest.mark.parametrize(
    ("package", "repository"),
    [("nccl-tests", "NVIDIA-nccl-tests"), ("gdrcopy", "NVIDIA-gdrcopy")],
)
def test_tarball_built_node_packages_are_release_tags(package: str, repository: str) -> None:
    version = CATALOG.node_packages[package].version
    assert version is not None
    assert f"v{version}" in tag_commits(repository)


@pytest.mark.parametrize(
    ("field", "repository", "tag"),
    [
        ("enroot", "NVIDIA-enroot", "v{version}"),
        ("enroot_makeself", "megastep-makeself", "release-{version}"),
        ("enroot_kernel_headers", "sabotage-linux-kernel-headers", "v{version}"),
        ("pyxis", "NVIDIA-pyxis", "v{version}"),
    ],
)
def test_the_container_sources_are_the_commits_their_tags_name(field: str, repository: str, tag: str) -> None:
    archive = getattr(CATALOG.slurm.containers, field)
    name = tag.format(version=archive.version)
    assert tag_commits(repository)[name] == archive.commit
    assert archive.url.endswith(f"/archive/refs/tags/{name}.tar.gz")


def test_the_dcgm_exporter_release_is_a_tag() -> None:
    # The exporter's counters and collectors were read at this tag (S-DCGM-EXPORTER).
    assert CATALOG.monitoring.exporters.dcgm_exporter_release in tag_commits("NVIDIA-dcgm-exporter")


def ctk_base_images() -> dict[str, dict[str, str]]:
    """The Cluster Toolkit blueprints' base_image (project, image) per blueprint, from the recorded lines."""
    images: dict[str, dict[str, str]] = {}
    blueprint = ""
    for line in (REFS / "cluster-toolkit-base-images.excerpt").read_text().splitlines():
        if line.startswith("== "):
            blueprint = line[3:].split(":")[0]
            images[blueprint] = {}
        elif ": " in line:
            key, _, value = line.strip().partition(": ")
            images[blueprint][key] = value
    return images


@pytest.mark.parametrize(
    ("architecture", "blueprint"),
    [
        ("x86_64", "examples/machine-learning/a3-megagpu-8g/a3mega-slurm-blueprint.yaml"),
        ("arm64", "examples/machine-learning/a4x-highgpu-4g/a4xhigh-slurm-blueprint.yaml"),
    ],
)
def test_gcp_default_images_are_the_cluster_toolkits(architecture: str, blueprint: str) -> None:
    # The Toolkit pins one dated image of the family (<family>-vYYYYMMDD); nodes take the family's newest.
    base = ctk_base_images()[blueprint]
    family = re.fullmatch(r"(.+)-v[0-9]{8}", base["image"])
    assert family is not None
    image = CATALOG.default_image("gcp", architecture)
    assert image.image == f"projects/{base['project']}/global/images/family/{family.group(1)}"
    assert family.group(1).endswith(f"-with-nvidia-{image.driver_branch}")


def test_the_recorded_refs_read_as_written() -> None:
    # Written out from the recorded answers, so a misreading parser cannot agree with itself.
    assert (
        tag_commits("NVIDIA-open-gpu-kernel-modules")["580.95.05"]
        == "2b436058a616676ec888ef3814d1db6b2220f2eb"
    )
    assert tag_commits("NVIDIA-pyxis")["v0.24.0"] == "107519944221822ea1dace4db8e7234b2eaa4cd5"
