"""The README's library example is documentation that must keep working."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- This block runs as a test.*?-->\n```python\n(.*?)```", text, re.S)
    assert match, "README.md lost its tested library example"
    return match.group(1)


def test_readme_library_example_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)  # the example uses paths relative to the repository
    exec(compile(_example(), "README.md", "exec"), {"__name__": "readme_example"})
    out = capsys.readouterr().out
    assert "/WebApplication/t:DB/t:hostname lazy-property" in out
    assert "[SET_NOT_LAZY]" in out


def test_readme_names_both_setup_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "pip install . && cdl resolve samples/webapp/system.cdl" in text
    assert "pip install '.[test]' && python -m pytest" in text
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install '.[test]' && python -m pytest" in ci
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
