"""The README's library example is documentation that must keep working."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click
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


# ---------------------------------------------------------------------------
# "Your first CDL document": its files are written and its commands run as printed

WRITES = re.compile(r"<!-- tests/test_readme.py writes this block to (\S+) -->\n```xml\n(.*?)```", re.S)
RUNS = re.compile(r"<!-- tests/test_readme.py runs this in the directory of the two files above -->\n```console\n(.*?)```", re.S)


def _section(title: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _sessions(block: str) -> list[tuple[str, str]]:
    """(command, output) for each ``$ command`` of a console block."""
    sessions: list[tuple[str, str]] = []
    for line in block.splitlines(keepends=True):
        if line.startswith("$ "):
            sessions.append((line[2:].strip(), ""))
        else:
            assert sessions, f"output before any command: {line!r}"
            sessions[-1] = (sessions[-1][0], sessions[-1][1] + line)
    return sessions


def test_first_document_commands_print_what_the_readme_shows(tmp_path: Path) -> None:
    section = _section("Your first CDL document")
    files = WRITES.findall(section)
    assert [name for name, _ in files] == ["templates.cdl", "system.cdl"]
    for name, content in files:
        (tmp_path / name).write_text(content, encoding="utf-8")
    blocks = RUNS.findall(section)
    # Every console block of the section is run.
    assert len(blocks) == section.count("```console") == 4
    commands = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for block in blocks:
        for command, expected in _sessions(block):
            commands.append(command)
            args = shlex.split(command)
            assert args[0] == "cdl"
            proc = subprocess.run(
                [sys.executable, "-m", "cdl", *args[1:]],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert (proc.returncode, proc.stderr) == (0, ""), command
            assert proc.stdout == expected, command
    # What the section promises to show.
    assert [c.split()[1] for c in commands] == ["resolve", "pending", "resolve", "explain"]
    assert "--set" in commands[2]
    for word in ('cdl:extends="Server"', 'cdl:ref="/hostname"', 'cdl:lazy="true"', '<cdl:import location="templates.cdl"/>'):
        assert word in section


# ---------------------------------------------------------------------------
# The synopsis names every command and option


def _synopsis() -> dict[str, str]:
    """The synopsis block: each command's text (its continuation lines and
    the LOADING options it names included), by command name."""
    section = _section("The command line")
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    entries: dict[str, str] = {}
    name = ""
    for line in block.group(1).splitlines():
        line = line.split("#", 1)[0]
        if line.startswith("cdl "):
            name = " ".join(word for word in line.split()[1:3] if re.fullmatch(r"[a-z]+", word))
            entries[name] = line
        elif line.startswith("LOADING:"):
            name = "LOADING"
            entries[name] = line
        elif line.strip():
            entries[name] += " " + line
    return {name: text.replace("[LOADING]", entries.get("LOADING", "")) for name, text in entries.items()}


def _commands() -> dict[str, click.Command]:
    """Every command of ``cdl``, by name (``deploy status`` for a group's)."""
    from cdl.cli import main

    found: dict[str, click.Command] = {}
    stack: list[tuple[str, click.Command]] = [("", main)]
    while stack:
        prefix, command = stack.pop()
        if isinstance(command, click.Group):
            stack.extend((f"{prefix} {name}".strip(), sub) for name, sub in command.commands.items())
        else:
            found[prefix] = command
    return found


def test_synopsis_names_every_command_and_option() -> None:
    synopsis = _synopsis()
    for name, command in _commands().items():
        text = synopsis.get(name) or synopsis.get(name.split()[0], "")
        assert text, f"the synopsis lacks cdl {name}"
        for param in command.params:
            if isinstance(param, click.Option) and "--help" not in param.opts:
                flags = [*param.opts, *param.secondary_opts]
                assert any(re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text) for f in flags), f"cdl {name}: {flags[0]}"
