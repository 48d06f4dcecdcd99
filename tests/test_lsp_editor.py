"""``cdl lsp`` in a real editor: Neovim, headless, with the README's set-up
(its ``init.lua`` block, verbatim) and the installed ``cdl`` first on
``PATH`` (no ``PYTHONPATH``: what users install is what runs).

- On the webapp sample with a misspelt prototype: diagnostics, a fix, a
  definition, a hover and the code lenses (tests/data/nvim/check.lua).
- With the system and its template open in one editor (issue 31, point 1):
  one server, the template's error on the system's import, references from
  the template, a saved rename seen in the system (tests/data/nvim/across.lua).

Skipped where Neovim is not installed (``apt-get install neovim``; ``.ci/run``
installs it where it can).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parent.parent
NVIM = ROOT / "tests" / "data" / "nvim"
SAMPLE = ROOT / "samples" / "webapp"
needs_nvim = pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")


def readme_init_lua() -> str:
    """The README's Neovim set-up."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\*\*Neovim\*\*.*?```lua\n(.*?)```", text, re.S)
    assert match, "README.md lost its Neovim set-up"
    return match.group(1)


def installed_env(result: Path) -> dict[str, str]:
    """The environment an editor starts ``cdl lsp`` in: the ``bin`` directory
    of the Python running the tests (its virtual environment, where the
    package and its ``cdl`` command are installed) first on ``PATH``, no
    ``PYTHONPATH``."""
    bin_dir = str(Path(sys.executable).parent)  # not resolved: a virtual environment's python is a link
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    env["CDL_LSP_RESULT"] = str(result)
    found = shutil.which("cdl", path=env["PATH"])
    assert found is not None and Path(found).parent == Path(bin_dir), f"no cdl command installed in {bin_dir}"
    return env


def run_nvim(tmp_path: Path, files: list[str], script: str) -> dict[str, Any]:
    """Run ``script`` (tests/data/nvim) in headless Neovim with the README's
    ``init.lua``, on ``files`` in ``tmp_path``; what it wrote."""
    result = tmp_path / "seen.json"
    (tmp_path / "init.lua").write_text(readme_init_lua(), encoding="utf-8")
    command = ["nvim", "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"), *files, "-c", f"luafile {NVIM / script}"]
    env = installed_env(result)
    subprocess.run(command, cwd=tmp_path, env=env, timeout=180, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    found: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return found


@needs_nvim
def test_neovim_shows_diagnostics_definition_hover_and_lenses(tmp_path: Path) -> None:
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        text = (SAMPLE / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace('cdl:extends="t:WebApp"', 'cdl:extends="t:WebAp"'), encoding="utf-8")
    seen = run_nvim(tmp_path, ["system.cdl"], "check.lua")
    [diagnostic] = seen["diagnostics"]
    assert (diagnostic["code"], diagnostic["line"], diagnostic["col"], diagnostic["end_col"]) == ("UNKNOWN_PROTOTYPE", 12, 33, 40)
    assert seen["fixed"] is True  # fixing the buffer, unsaved, cleared it
    [definition] = seen["definition"]
    assert definition["uri"] == (tmp_path / "webapp-template.cdl").resolve().as_uri()
    assert definition["range"]["start"] == {"line": 41, "character": 5}
    assert "/WebApplication/t:application = http://repository.org/test.war" in seen["hover"]["contents"]["value"]
    assert [lens["command"]["title"] for lens in seen["lenses"]] == ["wave 1"]
    assert {lens["command"]["command"] for lens in seen["lenses"]} == {"cdl.showPlanEntry"}


@needs_nvim
def test_neovim_serves_a_system_and_its_template_from_one_server(tmp_path: Path) -> None:
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    seen = run_nvim(tmp_path, ["system.cdl"], "across.lua")
    assert seen["clients"] == 1
    assert seen["import_error"] is True, seen["system_diagnostics"]  # on the system's cdl:import (line 10)
    [shown] = seen["system_diagnostics"]
    assert shown["message"].startswith("in the imported document") and "WebServr" in shown["message"]
    assert seen["import_fixed"] is True
    system = (tmp_path / "system.cdl").resolve().as_uri()
    assert [(ref["uri"], ref["range"]["start"]) for ref in seen["references"]] == [(system, {"line": 12, "character": 5})]
    assert seen["renamed"] is True, seen["system_after_rename"]  # UNKNOWN_PROTOTYPE on t:WebApp, line 13
