"""``cdl lsp`` in a real editor: Neovim, headless, with the README's set-up
(its ``init.lua`` block, the command pointed at this checkout), on the webapp
sample with a misspelt prototype (tests/data/nvim/check.lua says what is
looked at). Skipped where Neovim is not installed (``apt-get install neovim``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

ROOT = Path(__file__).resolve().parent.parent
NVIM = ROOT / "tests" / "data" / "nvim"


def readme_init_lua() -> str:
    """The README's Neovim set-up."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"\*\*Neovim\*\*.*?```lua\n(.*?)```", text, re.S)
    assert match, "README.md lost its Neovim set-up"
    return match.group(1)


@pytest.mark.skipif(shutil.which("nvim") is None, reason="Neovim is not installed")
def test_neovim_shows_diagnostics_definition_hover_and_lenses(tmp_path: Path) -> None:
    for name in ("system.cdl", "webapp-template.cdl", "component-model.cdl"):
        text = (ROOT / "samples" / "webapp" / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text.replace('cdl:extends="t:WebApp"', 'cdl:extends="t:WebAp"'), encoding="utf-8")
    result = tmp_path / "seen.json"
    init = readme_init_lua()
    assert init.count('{ "cdl", "lsp" }') == 2
    command = "{ " + ", ".join(json.dumps(part) for part in (sys.executable, "-m", "cdl", "lsp")) + " }"
    (tmp_path / "init.lua").write_text(init.replace('{ "cdl", "lsp" }', command), encoding="utf-8")
    env = {
        **os.environ,
        "CDL_LSP_RESULT": str(result),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    command = ["nvim", "--headless", "-n", "-i", "NONE", "-u", str(tmp_path / "init.lua"), "system.cdl", "-c", f"luafile {NVIM / 'check.lua'}"]
    subprocess.run(command, cwd=tmp_path, env=env, timeout=120, check=True, stdin=subprocess.DEVNULL, capture_output=True)
    seen = json.loads(result.read_text(encoding="utf-8"))
    [diagnostic] = seen["diagnostics"]
    assert (diagnostic["code"], diagnostic["line"], diagnostic["col"], diagnostic["end_col"]) == ("UNKNOWN_PROTOTYPE", 12, 33, 40)
    assert seen["fixed"] is True  # fixing the buffer, unsaved, cleared it
    [definition] = seen["definition"]
    assert definition["uri"] == (tmp_path / "webapp-template.cdl").resolve().as_uri()
    assert definition["range"]["start"] == {"line": 41, "character": 5}
    assert "/WebApplication/t:application = http://repository.org/test.war" in seen["hover"]["contents"]["value"]
    assert [lens["command"]["title"] for lens in seen["lenses"]] == ["wave 1"]
