"""Static checks as tests: ``mypy --strict`` over the package and ``ruff`` over
the package, the tests and the benchmarks, both configured in pyproject.toml.

They run here so that the README's test command (``pip install '.[test]' &&
python -m pytest``, which is also ``.ci/run``) runs them: the ``test`` extra
installs mypy, ruff and types-lxml. A failure shows the tool's own report.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(
    not (ROOT / "pyproject.toml").is_file() or not (ROOT / "src" / "cdl").is_dir(),
    reason="needs the source tree (pyproject.toml and src/cdl/), not an installed copy",
)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_strict_passes_on_the_package() -> None:
    # [tool.mypy] in pyproject.toml: strict = true over the cdl package.
    result = _run("mypy")
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
    assert "Success" in result.stdout


def test_mypy_is_configured_strict() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    mypy = config["tool"]["mypy"]
    assert mypy["strict"] is True and mypy["packages"] == ["cdl"]
    assert {"mypy", "ruff", "types-lxml"} <= {req.split(">")[0].split("=")[0] for req in config["project"]["optional-dependencies"]["test"]}


def test_ruff_passes_on_package_tests_and_benchmarks() -> None:
    result = _run("ruff", "check", "--no-cache", "src", "tests", "benchmarks")
    assert result.returncode == 0, f"ruff found problems:\n{result.stdout}{result.stderr}"
