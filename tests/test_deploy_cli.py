"""``cdl deploy``: a deployment session driven from the shell (issue 24, point 4).

Every command runs as a real process (``python -m cdl.cli``), as a shell
script would run it: each one loads the document, replays the journal, does
one thing and closes the journal, so what one command records the next one
must find."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import cdl
from conftest import journal_records

pytestmark = pytest.mark.skipif(os.name != "posix", reason="journals lock with flock")

ROOT = Path(__file__).resolve().parent.parent
FARM = "samples/webfarm/system.cdl"

# What each webfarm component reports when it is deployed.
REPORTS: dict[str, list[str]] = {
    "db": ["--set", "db/hostname=db-0.farm.internal"],
    "monitor": ["--set", "monitor/hostname=mon-0.farm.internal", "--set", "monitor/dashboardUrl=https://mon.farm.internal"],
    "apps/schema": ["--set", "apps/schema/schemaVersion=42"],
    "apps/app1": ["--set", "apps/app1/hostname=app-1.farm.internal", "--set", "apps/app1/port=8081"],
    "apps/app2": ["--set", "apps/app2/hostname=app-2.farm.internal", "--set", "apps/app2/port=8082"],
    "apps": [],
    "balancer": [
        "--set", "balancer/hostname=lb-0.farm.internal", "--set", "balancer/publicAddress=203.0.113.10",
        "--release", "balancer/certificate",
    ],
}  # fmt: skip


@pytest.fixture
def farm(tmp_path: Path) -> Path:
    """A copy of samples/webfarm under ``tmp_path`` (the working directory of the commands)."""
    shutil.copytree(ROOT / "samples" / "webfarm", tmp_path / "samples" / "webfarm")
    return tmp_path


def cdl_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cdl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )


def deploy(cwd: Path, command: str, *args: str, journal: str = "farm.journal") -> subprocess.CompletedProcess[str]:
    return cdl_cli(cwd, "deploy", command, FARM, *args, "--journal", journal)


def ok(result: subprocess.CompletedProcess[str], fresh: bool = False) -> list[str]:
    """The lines a command printed, which must have succeeded without a word
    on stderr (``fresh``: but the warning that the journal does not exist yet)."""
    warned = "warning: farm.journal: no such journal yet: nothing is recorded (the first event begins it)\n" if fresh else ""
    assert (result.returncode, result.stderr) == (0, warned), result.stderr
    return result.stdout.splitlines()


def refused(result: subprocess.CompletedProcess[str], code: str) -> str:
    """The one error line of a command refused with ``code`` (exit 1, nothing on stdout)."""
    assert (result.returncode, result.stdout) == (1, ""), result.stderr
    assert f"[{code}]" in result.stderr and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def events(journal: Path) -> list[dict[str, Any]]:
    records = journal_records(journal)
    assert records[0]["format"] == "cdl-deployment-journal"
    return records[1:]


def test_the_whole_webfarm_deployment(farm: Path) -> None:
    assert ok(deploy(farm, "ready"), fresh=True) == ["/db", "/monitor"]
    assert not (farm / "farm.journal").exists()  # reading begins nothing
    assert ok(deploy(farm, "done", "db", *REPORTS["db"])) == ["/apps/schema"]
    assert ok(deploy(farm, "done", "monitor", *REPORTS["monitor"])) == []
    assert ok(deploy(farm, "ready")) == ["/apps/schema"]
    assert ok(deploy(farm, "done", "apps/schema", *REPORTS["apps/schema"])) == ["/apps/app1", "/apps/app2"]
    assert ok(deploy(farm, "done", "/apps/app1", *REPORTS["apps/app1"])) == []
    # The balancer waits for the servers' values, not for /apps: both are ready now.
    assert ok(deploy(farm, "done", "apps/app2", *REPORTS["apps/app2"])) == ["/apps", "/balancer"]
    assert ok(deploy(farm, "done", "apps")) == []
    assert ok(deploy(farm, "done", "balancer", *REPORTS["balancer"])) == []
    assert ok(deploy(farm, "ready")) == []
    status = json.loads("\n".join(ok(deploy(farm, "status", "--format", "json"))))
    assert {c["path"]: c["state"] for c in status["components"]} == dict.fromkeys(
        ["/db", "/apps", "/apps/schema", "/apps/app1", "/apps/app2", "/balancer", "/monitor"], "deployed"
    )
    recorded = events(farm / "farm.journal")
    assert [(e["seq"], e["event"], e["path"]) for e in recorded] == [
        (1, "deployed", "/db"), (2, "deployed", "/monitor"), (3, "deployed", "/apps/schema"), (4, "deployed", "/apps/app1"),
        (5, "deployed", "/apps/app2"), (6, "deployed", "/apps"), (7, "deployed", "/balancer"),
    ]  # fmt: skip
    assert recorded[0]["values"] == {"db/hostname": "db-0.farm.internal"}
    assert recorded[6]["release"] == ["balancer/certificate"]
    # The end result is what cdl resolve makes of every value at once.
    everything = [arg for report in REPORTS.values() for arg in report]
    for fmt in ("xml", "json"):
        config = deploy(farm, "config", "balancer", "--format", fmt)
        resolved = cdl_cli(farm, "resolve", FARM, "--system-only", "--select", "balancer", "--format", fmt, *everything)
        assert ok(config) == ok(resolved)
    assert "app-1.farm.internal:8081,app-2.farm.internal:8082" in config.stdout


def test_status_says_why_each_component_waits(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    lines = ok(deploy(farm, "status"))
    assert lines[0].split() == ["deployed", "/db"]
    app1 = next(line for line in lines if line.split()[1] == "/apps/app1")
    assert app1.split()[0] == "waiting" and "/apps/schema/schemaVersion (from /apps/schema)" in app1
    assert "/db/hostname" not in app1  # supplied
    one = ok(deploy(farm, "status", "apps/app1"))
    assert one == [app1]
    data = json.loads(deploy(farm, "status", "apps/schema", "--format", "json").stdout)
    assert [c["state"] for c in data["components"]] == ["ready"]
    assert data["counts"] == {"waiting": 0, "ready": 1, "deployed": 0, "failed": 0, "blocked": 0, "changed": 0, "removing": 0, "removed": 0}


def test_status_pictures_are_the_plans_coloured_by_state(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    dot = "\n".join(ok(deploy(farm, "status", "--format", "dot")))
    assert dot.startswith("digraph") and "fillcolor" in dot
    mermaid = ok(deploy(farm, "status", "--format", "mermaid"))
    # The db is deployed: its node carries the deployed class (README "Deployment plan").
    assert "flowchart LR" in mermaid and any(line.strip().startswith("class ") and "deployed" in line for line in mermaid)


def test_a_failure_blocks_what_waits_on_it_and_retry_takes_it_back(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    assert ok(deploy(farm, "fail", "apps/schema", "--reason", "migration 0042 failed")) == [
        "/apps", "/apps/app1", "/apps/app2", "/balancer"
    ]  # fmt: skip
    app1 = ok(deploy(farm, "status", "apps/app1"))[0]
    assert app1.split()[0] == "blocked" and "/apps/schema (migration 0042 failed)" in app1
    assert ok(deploy(farm, "ready")) == ["/monitor"]
    assert ok(deploy(farm, "retry", "apps/schema")) == ["/apps/schema"]
    assert ok(deploy(farm, "ready")) == ["/apps/schema", "/monitor"]
    assert [e["event"] for e in events(farm / "farm.journal")] == ["deployed", "failed", "retry"]
    assert events(farm / "farm.journal")[1]["reason"] == "migration 0042 failed"


def test_set_records_values_outside_a_components_event(farm: Path) -> None:
    # The schema waited only for the database's hostname, not for its deployment.
    assert ok(deploy(farm, "set", "--set", "db/hostname=db-0.farm.internal")) == ["/apps/schema"]
    assert ok(deploy(farm, "set", "--set", "/db/hostname=db-0.farm.internal")) == []  # the same value again: nothing
    config = json.loads(deploy(farm, "config", "apps/schema", "--format", "json").stdout)
    assert "db-0.farm.internal" in json.dumps(config)
    error = refused(deploy(farm, "set", "--set", "db/hostname=db-1.farm.internal"), "SET_CONFLICT")
    assert "samples/webfarm/" in error or "farm.journal" in error


def test_config_shows_what_is_still_pending(farm: Path) -> None:
    config = json.loads("\n".join(ok(deploy(farm, "config", "db", "--format", "json"), fresh=True)))
    # A pending lazy property keeps its attributes (README "JSON output").
    assert list(config) == ["system"] and list(config["system"]) == ["db"]
    assert config["system"]["db"]["hostname"] == {"@cdl:type": "xsd:string", "@cdl:lazy": "true"}
    xml = "\n".join(ok(deploy(farm, "config", "db"), fresh=True))
    assert xml.startswith("<?xml") and "hostname" in xml


def test_config_as_json_nests_as_deep_as_the_document(tmp_path: Path) -> None:
    # As resolve --format json: the JSON is written with an explicit stack,
    # so a configuration deeper than the json module's recursion limit prints.
    depth = 1500
    body = "<x>" * depth + "v" + "</x>" * depth
    (tmp_path / "deep.cdl").write_text(
        '<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0">'
        f"<cdl:system><app><port cdl:lazy='true'/>{body}</app></cdl:system></cdl:cdl>",
        encoding="utf-8",
    )
    result = cdl_cli(tmp_path, "deploy", "config", "deep.cdl", "app", "--journal", "deep.journal", "--format", "json")
    assert result.returncode == 0 and result.stderr.startswith("warning: deep.journal: no such journal yet"), result.stderr
    text = result.stdout
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * depth))  # the reader here recurses; the command does not
    try:
        data = json.loads(text)
    finally:
        sys.setrecursionlimit(limit)
    node = data["system"]["app"]
    for _ in range(depth):
        node = node["x"]
    assert node == "v"


def ok_text(result: subprocess.CompletedProcess[str]) -> str:
    ok(result)
    return result.stdout


def test_refusals_exit_1_and_leave_the_journal_unchanged(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    journal = farm / "farm.journal"
    before = journal.read_bytes()
    refused(deploy(farm, "done", "balancer"), "NOT_READY")
    refused(deploy(farm, "done", "monitor", "--set", "db/hostname=elsewhere"), "SET_CONFLICT")
    refused(deploy(farm, "retry", "monitor"), "NOT_FAILED")
    refused(deploy(farm, "done", "dbb"), "COMPONENT_NOT_FOUND")
    refused(deploy(farm, "done", "apps/schema", "--set", "apps/schema/image=x"), "SET_NOT_LAZY")
    assert journal.read_bytes() == before
    templates = farm / "samples" / "webfarm" / "templates.cdl"
    templates.write_text(templates.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    error = refused(deploy(farm, "ready"), "JOURNAL_MISMATCH")
    assert error.startswith("farm.journal:1: [JOURNAL_MISMATCH]") and "templates.cdl changed" in error
    assert journal.read_bytes() == before


def test_a_corrupt_journal_names_its_line(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    journal = farm / "farm.journal"
    journal.write_bytes(journal.read_bytes() + b"garbage\n")
    assert refused(deploy(farm, "ready"), "JOURNAL_CORRUPT").startswith("farm.journal:3: [JOURNAL_CORRUPT]")


def test_a_torn_last_line_is_a_warning(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    journal = farm / "farm.journal"
    journal.write_bytes(journal.read_bytes() + b'{"seq":2,"time":"2026')
    result = deploy(farm, "ready")
    assert result.returncode == 0 and result.stdout.splitlines() == ["/apps/schema", "/monitor"]
    assert result.stderr.startswith("warning: farm.journal:3: dropped the last line")


def test_a_journal_in_use_is_locked(farm: Path) -> None:
    ok(deploy(farm, "ready"), fresh=True)
    with cdl.load(farm / FARM).deploy(journal=farm / "farm.journal"):
        error = refused(deploy(farm, "done", "db", *REPORTS["db"], "--wait", "1"), "JOURNAL_LOCKED")  # not the default 60 s
        assert "after waiting 1 s" in error
    assert ok(deploy(farm, "done", "db", *REPORTS["db"])) == ["/apps/schema"]


def test_reading_commands_create_and_write_nothing(farm: Path) -> None:
    for command in (["status"], ["ready"], ["config", "db"]):
        result = deploy(farm, *command, journal="farm.jornal")  # a typo
        assert result.returncode == 0 and "farm.jornal: no such journal yet" in result.stderr
    assert not (farm / "farm.jornal").exists()
    notes = farm / "notes.txt"
    notes.write_bytes(b"remember the milk")  # one line without a newline: no header cut short
    for command in (["status"], ["ready"], ["config", "db"], ["done", "db", *REPORTS["db"]], ["fail", "db", "--reason", "x"]):
        error = refused(deploy(farm, *command, journal="notes.txt"), "NOT_JOURNAL")
        assert error.startswith("notes.txt:1: [NOT_JOURNAL] notes.txt is not a deployment journal")
    assert notes.read_bytes() == b"remember the milk"


def test_a_reason_that_is_no_text_is_refused(farm: Path) -> None:
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    before = (farm / "farm.journal").read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "cdl", "deploy", "fail", FARM, "apps/schema", "--journal", "farm.journal", "--reason", b"disk \xff full"],
        capture_output=True, cwd=farm, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 1 and b"[BAD_TEXT] the reason holds '\\udcff'" in result.stderr and b"Traceback" not in result.stderr
    assert (farm / "farm.journal").read_bytes() == before


def test_an_event_waits_for_the_journal(farm: Path) -> None:
    """While a program holds the journal, a command waits for it (--wait,
    60 s by default) and records its event once it is let go; with --wait 0
    it is refused at once."""
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    holder = cdl.load(farm / FARM).deploy(journal=farm / "farm.journal")
    try:
        error = refused(deploy(farm, "done", "monitor", *REPORTS["monitor"], "--wait", "0"), "JOURNAL_LOCKED")
        assert "--wait" in error
        waiting = subprocess.Popen(
            [sys.executable, "-m", "cdl", "deploy", "done", FARM, "monitor", *REPORTS["monitor"], "--journal", "farm.journal"],
            cwd=farm, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        time.sleep(2)  # it has loaded the documents and waits for the journal
        assert waiting.poll() is None
    finally:
        holder.close()
    out, err = waiting.communicate(timeout=120)
    assert (waiting.returncode, out, err) == (0, "", "")
    assert [e["path"] for e in events(farm / "farm.journal")] == ["/db", "/monitor"]


def test_events_recorded_in_parallel_from_the_shell(farm: Path) -> None:
    """What the README says of a wave: its components may be deployed in
    parallel, each reported by its own command."""
    ok(deploy(farm, "done", "db", *REPORTS["db"]))
    ok(deploy(farm, "done", "apps/schema", *REPORTS["apps/schema"]))
    cdl_command = f"{shlex.quote(sys.executable)} -m cdl deploy done {FARM}"
    script = " & ".join(
        f"{cdl_command} {component} --journal farm.journal {shlex.join(REPORTS[component])} > {component.replace('/', '-')}.out"
        for component in ("apps/app1", "apps/app2", "monitor")
    ) + " & wait"
    result = subprocess.run(["bash", "-c", script], cwd=farm, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300, check=False)
    assert (result.returncode, result.stderr) == (0, "")
    recorded = events(farm / "farm.journal")
    assert sorted(e["path"] for e in recorded[2:]) == ["/apps/app1", "/apps/app2", "/monitor"]
    assert [e["seq"] for e in recorded] == [1, 2, 3, 4, 5]
    printed = [(farm / f"{c}.out").read_text() for c in ("apps-app1", "apps-app2", "monitor")]
    assert sorted("".join(printed).split()) == ["/apps", "/balancer"]  # whichever of the servers came last made them ready
    assert ok(deploy(farm, "ready")) == ["/apps", "/balancer"]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["deploy", "ready", FARM], "Missing option '--journal'"),
        (["deploy", "set", FARM, "--journal", "j"], "give at least one --set or --release"),
        (["deploy", "fail", FARM, "db", "--journal", "j"], "Missing option '--reason'"),
        (["deploy", "done", FARM, "--journal", "j"], "Missing argument 'COMPONENT'"),
        (["deploy", "ready", FARM, "--journal", FARM], "is one of the input documents"),
        (["deploy", "done", FARM, "db", "--journal", "j", "--set", "db/hostname"], "is not LIST/PATH=VALUE"),
        (["deploy", "status", FARM, "--journal", "j", "--format", "svg"], "Invalid value for '--format'"),
        (["deploy", "done", FARM, "db", "--journal", "j", "--wait", "-1"], "Invalid value for '--wait'"),
        (["deploy", "done", FARM, "db", "--journal", "j", "--wait", "nan"], "Invalid value for '--wait'"),
        (["deploy", "ready", FARM, "--journal", "j", "--wait", "soon"], "Invalid value for '--wait'"),
    ],
)
def test_usage_errors_exit_2(farm: Path, args: list[str], words: str) -> None:
    before = (farm / FARM).read_bytes()
    result = cdl_cli(farm, *args)
    assert result.returncode == 2 and words in result.stderr and result.stdout == ""
    assert not (farm / "j").exists() and (farm / FARM).read_bytes() == before


def test_the_shared_options_work_here_too(farm: Path) -> None:
    refused(deploy(farm, "ready", "--max-elements", "5"), "LIMIT_EXCEEDED")
    assert not (farm / "farm.journal").exists()  # nothing begun for a document that cannot be loaded


def test_a_catalog_is_part_of_what_the_journal_began_with(farm: Path) -> None:
    system = farm / FARM
    system.write_text(
        system.read_text(encoding="utf-8").replace('location="templates.cdl"', 'location="http://example.com/webfarm/templates.cdl"'),
        encoding="utf-8",
    )
    catalog = farm / "catalog.xml"
    catalog.write_text(
        '<catalog xmlns="urn:oasis:names:tc:entity:xmlns:xml:catalog">'
        '<uri name="http://example.com/webfarm/templates.cdl" uri="samples/webfarm/templates.cdl"/></catalog>\n',
        encoding="utf-8",
    )
    refused(deploy(farm, "ready"), "IMPORT_REFUSED")  # without the catalog, a remote import
    assert ok(deploy(farm, "done", "db", *REPORTS["db"], "--catalog", "catalog.xml")) == ["/apps/schema"]
    header = journal_records(farm / "farm.journal")[0]
    assert [c["path"] for c in header["catalogs"]] == ["catalog.xml"]
    assert [d["url"] for d in header["documents"]] == [FARM, "samples/webfarm/templates.cdl"]  # where the catalog led
    assert ok(deploy(farm, "ready", "--catalog", "catalog.xml")) == ["/apps/schema", "/monitor"]
    catalog.write_text(catalog.read_text(encoding="utf-8") + "<!-- moved -->\n", encoding="utf-8")
    assert "catalog" in refused(deploy(farm, "ready", "--catalog", "catalog.xml"), "JOURNAL_MISMATCH")


# ---------------------------------------------------------------------------
# The README's session is real


def _readme_sessions() -> list[list[tuple[str, list[str]]]]:
    """The console blocks of README.md's "Deployment sessions" section: each a
    list of (command, output lines)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.partition("\n## Deployment sessions")[2].partition("\n## ")[0]
    sessions = []
    for block in re.findall(r"```console\n(.*?)```", section, re.DOTALL):
        session: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                session.append((line[2:], []))
            else:
                session[-1][1].append(line)
        sessions.append(session)
    return sessions


def test_the_readme_session_is_real(farm: Path) -> None:
    sessions = _readme_sessions()
    assert sessions and sum(len(s) for s in sessions) >= 10
    commands = [command for session in sessions for command, _ in session]
    assert any("deploy done" in c and "balancer" in c for c in commands)  # the whole deployment, to its end
    for session in sessions:
        for command, expected in session:
            words = shlex.split(command)
            assert words[:2] == ["cdl", "deploy"], command
            result = cdl_cli(farm, *words[1:])
            # As a terminal shows it: a warning (on opening), what the command printed, then its error, if any.
            warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
            errors = [line for line in result.stderr.splitlines() if not line.startswith("warning: ")]
            assert warnings + result.stdout.splitlines() + errors == expected, command
            assert result.returncode == (1 if errors else 0), command


def test_the_readme_library_example_runs_and_prints_what_it_says(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.partition("\n## Deployment sessions")[2].partition("\n## ")[0]
    match = re.search(r"<!-- This example runs in tests/test_deploy_cli.py. -->\n```python\n(.*?)```\n\nIt prints:\n\n```text\n(.*?)```", section, re.S)
    assert match, "the Deployment sessions section lost its library example"
    monkeypatch.chdir(ROOT)  # the example uses paths relative to the repository
    exec(compile(match.group(1), "README.md", "exec"), {"__name__": "readme_example"})
    assert capsys.readouterr().out == match.group(2)
