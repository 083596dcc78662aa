"""Find the shared spec folder for tests (skip with a reason when it is absent)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent


def spec_dir() -> Path:
    """The spec folder: $MCP_SPEC_DIR, else ../shared/spec beside the repo; skip if absent."""
    env = os.environ.get("MCP_SPEC_DIR")
    path = Path(env) if env else REPO.parent / "shared" / "spec"
    if not (path / "schema").is_dir():
        pytest.skip(f"the MCP spec folder is absent ({path}); set MCP_SPEC_DIR to run this test")
    return path


def schema_for(version: str) -> Any:
    return json.loads((spec_dir() / "schema" / version / "schema.json").read_text())
