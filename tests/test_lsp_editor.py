"""``cdl lsp`` in a real editor: Neovim, headless, with the README's set-up
(its ``init.lua`` block, verbatim) and the installed ``cdl`` first on
``PATH`` (no ``PYTHONPATH``: what users install is what runs).

- On the webapp sample with a misspelt prototype: diagnostics, a fix, a
  definition, a hover and the code lenses (tests/data/nvim/check.lua).
- With the system and its template open in one editor (issue 31, point 1):
  one server, the template's error on the system's import, references from
  the template, a saved rename seen in the system (tests/data/nvim/across.lua).

Run with every Neovim at hand: ``nvim`` on ``PATH`` and those named in
``CDL_TEST_NVIM`` (executables, separated as ``PATH`` is), so that both
branches of the block run (Neovim 0.7's ``vim.lsp.start_client``, 0.8 and
later's ``vim.lsp.start``). Skipped where none is installed, or only one
older than the README's 0.7 (``.ci/run`` installs Debian's and a recent
one where it can).
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
#: The oldest Neovim the README's set-up is for.
OLDEST = (0, 7)


def neovims() -> list[str]:
    """The Neovim executables at hand (``nvim`` on ``PATH``, then ``CDL_TEST_NVIM``'s), each once."""
    named = [shutil.which("nvim") or "", *os.environ.get("CDL_TEST_NVIM", "").split(os.pathsep)]
    return list(dict.fromkeys(os.path.realpath(n) for n in named if n and os.access(n, os.X_OK)))


def version_of(nvim: str) -> tuple[int, ...]:
    """``nvim``'s version (``NVIM v0.7.2`` -> (0, 7, 2)); () when it does not say."""
    try:
        first = subprocess.run([nvim, "--version"], capture_output=True, text=True, timeout=60, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    match = re.match(r"NVIM v(\d+)\.(\d+)\.(\d+)", first)
    return tuple(int(part) for part in match.groups()) if match else ()


def nvim_params() -> list[Any]:
    found = [(nvim, version_of(nvim)) for nvim in neovims()]
    usable = [pytest.param(nvim, id="nvim-" + ".".join(map(str, v))) for nvim, v in found if v >= OLDEST]
    return usable or [pytest.param("", marks=pytest.mark.skip(reason=f"no Neovim {OLDEST[0]}.{OLDEST[1]} or later installed"))]


with_each_nvim = pytest.mark.parametrize("nvim", nvim_params())


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


def run_nvim(nvim: str, tmp_path: Path, files: list[str], script: str) -> dict[str, Any]:
    """Run ``script`` (tests/data/nvim) in headless Neovim (the executable
    ``nvim``) with the README's ``init.lua``, on ``files`` in ``tmp_path``;
    what it wrote."""
    result = tmp_path / "seen.json"
    (tmp_path / "init.lua").write_text(readme_init_lua(), encoding="utf-8")
    command = [nvim, "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"), *files, "-c", f"luafile {NVIM / script}"]
    env = installed_env(result)
    subprocess.run(command, cwd=tmp_path, env=env, timeout=180, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    found: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return found


@with_each_nvim
def test_neovim_shows_diagnostics_definition_hover_and_lenses(nvim: str, tmp_path: Path) -> None:
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        text = (SAMPLE / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace('cdl:extends="t:WebApp"', 'cdl:extends="t:WebAp"'), encoding="utf-8")
    seen = run_nvim(nvim, tmp_path, ["system.cdl"], "check.lua")
    [diagnostic] = seen["diagnostics"]
    assert (diagnostic["code"], diagnostic["line"], diagnostic["col"], diagnostic["end_col"]) == ("UNKNOWN_PROTOTYPE", 12, 33, 40)
    assert seen["fixed"] is True  # fixing the buffer, unsaved, cleared it
    [definition] = seen["definition"]
    assert definition["uri"] == (tmp_path / "webapp-template.cdl").resolve().as_uri()
    assert definition["range"]["start"] == {"line": 41, "character": 5}
    assert "/WebApplication/t:application = http://repository.org/test.war" in seen["hover"]["contents"]["value"]
    assert [lens["command"]["title"] for lens in seen["lenses"]] == ["wave 1"]
    assert {lens["command"]["command"] for lens in seen["lenses"]} == {"cdl.showPlanEntry"}
    # Running the lens (Neovim 0.7.2 said "Language server does not support command" of an empty one).
    assert not [note for note in seen["lens_notes"] if "command" in note], seen["lens_notes"]
    assert seen["lens_shown"] == ["/WebApplication: wave 1; 2 child components"]


@with_each_nvim
def test_neovim_serves_a_system_and_its_template_from_one_server(nvim: str, tmp_path: Path) -> None:
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        shutil.copy(SAMPLE / name, tmp_path / name)
    seen = run_nvim(nvim, tmp_path, ["system.cdl"], "across.lua")
    assert seen["clients"] == 1
    assert seen["import_error"] is True, seen["system_diagnostics"]  # on the system's cdl:import (line 10)
    [shown] = seen["system_diagnostics"]
    assert shown["message"].startswith("in the imported document") and "WebServr" in shown["message"]
    assert seen["import_fixed"] is True
    system = (tmp_path / "system.cdl").resolve().as_uri()
    assert [(ref["uri"], ref["range"]["start"]) for ref in seen["references"]] == [(system, {"line": 12, "character": 5})]
    assert seen["renamed"] is True, seen["system_after_rename"]  # UNKNOWN_PROTOTYPE on t:WebApp, line 13
