"""Helpers shared by the test suite (importable because tests/ is on sys.path)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with the reason it is missing."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"../shared/{'/'.join(parts)} not found: this test needs the shared data "
                    "(present in CI, absent from a user's clone)")
    return p
