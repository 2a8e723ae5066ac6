"""Paths shared by the Python tests: ctest sets them; run by hand, they default to the tree."""
import os
import pathlib

import pytest

ROOT = pathlib.Path(os.environ.get("CLUSTERTWIN_SOURCE_DIR",
                                   pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("CLUSTERTWIN_BUILD_DIR", ROOT / "build"))


@pytest.fixture
def cli():
    """The clustertwin executable beside the module."""
    exe = BUILD / "clustertwin"
    if not exe.exists():
        pytest.skip(f"{exe} not built")
    return str(exe)


@pytest.fixture
def scenarios():
    return ROOT / "scenarios"
