"""The boot scripts nodes run (AWS user-data), as rendered for the examples: golden files."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.components.harness import plan_file, user_data
from tests.conftest import EXAMPLES, assert_golden

AWS_EXAMPLES = [p for p in EXAMPLES if p.name.startswith("aws-")]


@pytest.mark.parametrize("path", AWS_EXAMPLES, ids=[p.stem for p in AWS_EXAMPLES])
def test_user_data_golden(path: Path) -> None:
    plan = plan_file(path, "dev")
    for resource in plan.resources:
        if resource.type == "aws:ec2/launchTemplate:LaunchTemplate":
            assert_golden(f"boot/{path.stem}.dev.{resource.name}.sh", user_data(plan, resource.name))
