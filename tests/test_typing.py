"""The public API type-checks as users write it: scripts that use ``cdl`` pass
``mypy --strict`` against the installed package (which ships ``py.typed``),
and mistakes its types can see are reported.

mypy runs from an empty directory with a configuration of its own, so it
reads the ``cdl`` that the interpreter running the tests imports (under
``.ci/run``, the installed wheel), never the checkout's ``src/``. The Python
examples of the README are checked the same way.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parent.parent

#: Scripts a user may write, each of which must pass ``mypy --strict``.
CLEAN = {
    "one_value.py": """
        import cdl

        p = "system.cdl"
        port = cdl.load(p).resolve().to_data()["system"]["db"]["port"]
        print(port)
    """,
    "annotated.py": """
        from __future__ import annotations

        from collections.abc import Callable, Iterable, Sequence

        import cdl


        def read_url(url: str) -> bytes:
            return b""


        def open_document(path: str, fetch: Callable[[str], bytes] = read_url) -> cdl.Document:
            return cdl.load(path, resolver=fetch, limits=cdl.Limits(max_elements=10_000), catalogs=["catalog.xml"])


        def resolve_all(document: cdl.Document, rounds: Iterable[cdl.RoundLike]) -> cdl.Resolution:
            return document.resolve(rounds=rounds)


        def walk(value: cdl.Data, depth: int = 0) -> int:
            # The JSON shape of one value: a string, an object or a list of values.
            if isinstance(value, str):
                return depth
            children = value.values() if isinstance(value, dict) else value
            return max((walk(child, depth + 1) for child in children), default=depth)


        document = open_document("system.cdl")
        rounds: list[cdl.RoundLike] = [{"set": {"db/hostname": "db"}}, cdl.Round({"web/hostname": "web"}, ())]
        resolution = resolve_all(document, rounds)
        data: dict[str, cdl.Data] = resolution.to_data(system_only=True, select=["db"])
        depth = walk(data["system"])
        pending: list[cdl.Pending] = resolution.pending
        later: cdl.Resolution = resolution.supply({"db/port": "1"}, release=["web/tls"])
        waves: Sequence[Sequence[cdl.PlannedComponent]] = later.plan().waves
        why: list[cdl.Explanation] = later.explain("db/port")
        steps: tuple[cdl.Step, ...] = why[0].steps
        try:
            document.resolve({"db/port": "80"})
        except cdl.CdlError as error:
            code: str = error.code
    """,
    "deploy.py": """
        import cdl

        document = cdl.load("system.cdl")
        with document.deploy(journal="farm.journal") as deployment:
            for path in deployment.ready():
                status: cdl.ComponentStatus = deployment.status(path).components[0]
                state: cdl.ComponentState = status.state
                if state == "ready":
                    values = dict.fromkeys(status.supplies, "v")
                    became: list[str] = deployment.deployed(path, values, release=status.releases)
                config = deployment.configuration(path)
                host = config["system"]["db"]["hostname"]
                xml: bytes = deployment.configuration(path, format="xml")
            counts: dict[str, int] = deployment.status().counts()
            again: cdl.Resolution = document.resolve(rounds=deployment.rounds)
            final: cdl.Resolution = deployment.resolution()
            plan: cdl.Plan = deployment.plan
    """,
}

#: Mistakes mypy --strict must report, with the line it reports each on.
MISTAKES = {
    "state_typo.py": (
        """
        import cdl

        status = cdl.load("system.cdl").deploy().status().components[0]
        if status.state == "finished":
            print("done")
        """,
        4,
    ),
    "round_of_a_string.py": (
        """
        import cdl

        cdl.load("system.cdl").resolve(rounds=["db/hostname=db"])
        """,
        3,
    ),
    "resolver_of_text.py": (
        """
        import cdl


        def fetch(url: str) -> str:
            return ""


        cdl.load("system.cdl", resolver=fetch)
        """,
        8,
    ),
}


def _mypy(directory: Path, files: list[str]) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` over ``files`` in ``directory``, with no configuration of the checkout."""
    (directory / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir", str(directory / ".mypy_cache"), *files],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _readme_examples() -> dict[str, str]:
    readme = ROOT / "README.md"
    if not readme.is_file():
        return {}
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    return {f"readme_{n}.py": block for n, block in enumerate(blocks, 1)}


def test_user_scripts_pass_mypy_strict_and_its_mistakes_are_reported(tmp_path: Path) -> None:
    scripts = {**{name: textwrap.dedent(text) for name, text in CLEAN.items()}, **_readme_examples()}
    scripts.update({name: textwrap.dedent(text).lstrip("\n") for name, (text, _) in MISTAKES.items()})
    for name, text in scripts.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    proc = _mypy(tmp_path, sorted(scripts))
    reported = [line for line in proc.stdout.splitlines() if ": error: " in line]
    clean = [line for line in reported if line.split(":", 1)[0] not in MISTAKES]
    assert clean == [], proc.stdout
    for name, (_, line) in MISTAKES.items():
        assert any(found.startswith(f"{name}:{line}: error: ") for found in reported), (name, proc.stdout)
    assert len(_readme_examples()) >= 2 or not (ROOT / "README.md").is_file()
