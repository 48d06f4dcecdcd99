"""cdl.resolution.explain: provenance (issue 15): Resolution.explain, cdl explain, and
resolve --format json / --select."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import cdl
from conftest import CDL_DECL, load_text

SAMPLES = Path(__file__).resolve().parent.parent / "samples"


def doc(lines: list[str], part: str = "configuration", attrs: str = "") -> str:
    """A document whose ``part`` holds ``lists``, one per line from line 3."""
    return f"<cdl:cdl {CDL_DECL} {attrs}>\n<cdl:{part}>\n" + "\n".join(lines) + f"\n</cdl:{part}></cdl:cdl>"


def explain(xml: str, path: str, **kw: Any) -> list[dict[str, Any]]:
    return [e.to_data() for e in load_text(xml).resolve(**kw).explain(path)]


def one(xml: str, path: str, **kw: Any) -> dict[str, Any]:
    found = explain(xml, path, **kw)
    assert len(found) == 1, found
    return found[0]


def kinds(e: dict[str, Any]) -> list[str]:
    return [s["kind"] for s in e["steps"]]


def brief(e: dict[str, Any]) -> list[tuple[Any, ...]]:
    """(kind, line, path) per step."""
    return [(s["kind"], s["line"], s["path"]) for s in e["steps"]]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdl", *args], check=False, capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------
# 7.2.4: Tomcat across an import (written, inherited, overrides)

TEMPLATES = """<?xml version="1.0"?>
<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
         targetNamespace="urn:tmp-uri1" xmlns="urn:tmp-uri1">
  <cdl:configuration>
    <WebServer>
      <hostname/>
      <port>80</port>
    </WebServer>
    <Tomcat cdl:extends="WebServer">
      <port>8080</port>
      <maxThreads>200</maxThreads>
    </Tomcat>
  </cdl:configuration>
</cdl:cdl>
"""

SYSTEM = """<?xml version="1.0"?>
<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0" xmlns:tmpl="urn:tmp-uri1">
  <cdl:import location="templates.cdl"/>
  <cdl:system>
    <Tomcat cdl:extends="tmpl:Tomcat">
      <tmpl:hostname>www.example.org</tmpl:hostname>
    </Tomcat>
  </cdl:system>
</cdl:cdl>
"""


@pytest.fixture
def tomcat(write_docs: Any) -> Path:
    path: Path = write_docs({"system.cdl": SYSTEM, "templates.cdl": TEMPLATES})
    return path


def test_tomcat_across_an_import(tomcat: Path) -> None:
    res = cdl.load(tomcat).resolve()
    [port] = [e.to_data() for e in res.explain("Tomcat/tmpl:port")]
    sys_url, tmpl_url = cdl.load(tomcat).urls
    assert port == {
        "path": "/Tomcat/tmpl:port",
        "value": "8080",
        "status": "resolved",
        "steps": [
            {"kind": "written", "url": tmpl_url, "line": 10, "path": "/tmpl:Tomcat/tmpl:port"},
            {"kind": "inherited", "url": sys_url, "line": 5, "path": "/Tomcat", "from_list": "tmpl:Tomcat"},
            {
                "kind": "overrides",
                "url": tmpl_url,
                "line": 7,
                "path": "/tmpl:WebServer/tmpl:port",
                "value": "80",
                "from_list": "tmpl:WebServer",
            },
        ],
    }
    # inherited through two links: written in WebServer, copied into tmpl:Tomcat, then into Tomcat
    [threads] = [e.to_data() for e in res.explain("/Tomcat/tmpl:maxThreads")]
    assert brief(threads) == [("written", 11, "/tmpl:Tomcat/tmpl:maxThreads"), ("inherited", 5, "/Tomcat")]
    # the system's own value overrides an empty one (an empty value is a value: "")
    [host] = [e.to_data() for e in res.explain("Tomcat/tmpl:hostname")]
    assert host["value"] == "www.example.org"
    assert [(s["kind"], s["url"], s["line"], s.get("value")) for s in host["steps"]] == [
        ("written", sys_url, 6, None),
        ("overrides", tmpl_url, 6, ""),
    ]


def test_a_chain_of_prototypes_shows_every_link(tomcat: Path) -> None:
    res = cdl.load(tomcat).resolve()
    [host] = [e.to_data() for e in res.explain("tmpl:Tomcat/tmpl:hostname")]
    assert brief(host) == [("written", 6, "/tmpl:WebServer/tmpl:hostname"), ("inherited", 9, "/tmpl:Tomcat")]
    # a list explains its own cdl:extends, and the prototype's, and no children
    [tc] = [e.to_data() for e in res.explain("Tomcat")]
    assert tc["value"] is None and tc["status"] == "resolved"
    assert [(s["kind"], s["line"], s.get("from_list")) for s in tc["steps"]] == [
        ("written", 5, None),
        ("inherited", 5, "tmpl:Tomcat"),
        ("inherited", 9, "tmpl:WebServer"),
    ]


def test_three_links_in_one_document() -> None:
    xml = doc(["<C><x>1</x></C>", "<B cdl:extends='C'/>", "<A cdl:extends='B'/>"])
    assert brief(one(xml, "A/x")) == [("written", 3, "/C/x"), ("inherited", 5, "/A"), ("inherited", 4, "/B")]


def test_text_form_puts_file_and_line_first(tomcat: Path) -> None:
    out = run_cli("explain", str(tomcat), "Tomcat/tmpl:port")
    assert out.returncode == 0, out.stderr
    sys_url, tmpl_url = cdl.load(tomcat).urls
    lines = out.stdout.splitlines()
    assert lines[0] == "/Tomcat/tmpl:port = 8080"
    assert [line.split()[:2] for line in lines[1:]] == [
        ["written", f"{tmpl_url}:10"],
        ["inherited", f"{sys_url}:5"],
        ["overrides", f"{tmpl_url}:7"],
    ]
    assert lines[2].endswith("Tomcat extends tmpl:Tomcat")
    assert lines[3].endswith("80, from tmpl:WebServer")


def test_json_form_is_the_library_data(tomcat: Path) -> None:
    out = run_cli("explain", str(tomcat), "/Tomcat/tmpl:port", "--format", "json")
    assert out.returncode == 0, out.stderr
    res = cdl.load(str(tomcat)).resolve()
    assert json.loads(out.stdout) == [e.to_data() for e in res.explain("/Tomcat/tmpl:port")]


# ---------------------------------------------------------------------------
# 7.2.4: hierarchical extends

HIERARCHICAL = doc(
    [
        "<WebServer><hostname>localhost</hostname><port>80</port></WebServer>",
        "<AppPlatform>",
        "  <WebServer cdl:extends='WebServer'/>",
        "  <ApplicationServer><hostname>localhost</hostname><port>8080</port></ApplicationServer>",
        "</AppPlatform>",
        "<MyApp cdl:extends='AppPlatform'>",
        "  <WebServer cdl:extends='WebServer'><hostname>www.example.com</hostname></WebServer>",
        "</MyApp>",
        "<Other cdl:extends='AppPlatform'/>",
    ]
)


def test_hierarchical_extends() -> None:
    # inherited by the property's own cdl:extends, inside a list that overrides the prototype's
    port = one(HIERARCHICAL, "MyApp/WebServer/port")
    assert port["value"] == "80"
    assert [(s["kind"], s["line"], s["path"], s.get("from_list")) for s in port["steps"]] == [
        ("written", 3, "/WebServer/port", None),
        ("inherited", 9, "/MyApp/WebServer", "WebServer"),
    ]
    host = one(HIERARCHICAL, "MyApp/WebServer/hostname")
    assert [(s["kind"], s["line"], s.get("value")) for s in host["steps"]] == [("written", 9, None), ("overrides", 3, "localhost")]
    web = one(HIERARCHICAL, "MyApp/WebServer")
    assert [(s["kind"], s["line"], s["path"]) for s in web["steps"]] == [
        ("written", 9, "/MyApp/WebServer"),
        ("overrides", 5, "/AppPlatform/WebServer"),
        ("inherited", 9, "/MyApp/WebServer"),
    ]
    # copied inside an inherited sub-list: inherited too, with every link
    assert brief(one(HIERARCHICAL, "Other/WebServer/port")) == [
        ("written", 3, "/WebServer/port"),
        ("inherited", 11, "/Other"),
        ("inherited", 5, "/AppPlatform/WebServer"),
    ]
    assert brief(one(HIERARCHICAL, "Other/ApplicationServer/port")) == [
        ("written", 6, "/AppPlatform/ApplicationServer/port"),
        ("inherited", 11, "/Other"),
    ]


# ---------------------------------------------------------------------------
# 7.3.4: an absolute reference translated before inheritance (d = 300)

SPEC_7_3_4 = doc(
    [
        "<a><b>100</b>",
        "  <c><d cdl:ref='/b'/></c></a>",
        "<a2><b>200</b>",
        "  <a3 cdl:extends='a'>",
        "    <b>300</b></a3></a2>",
    ]
)


def test_translated_reference_inherited_into_a3() -> None:
    d = one(SPEC_7_3_4, "a2/a3/c/d")
    assert d["value"] == "300"
    assert kinds(d) == ["written", "reference", "inherited"]
    written, ref, inherited = d["steps"]
    assert (written["line"], written["path"]) == (4, "/a/c/d")
    assert (inherited["line"], inherited["path"], inherited["from_list"]) == (6, "/a2/a3", "a")
    assert ref["url"] == "mem.cdl" and ref["line"] == 4 and ref["path"] == "/a2/a3/c/d"
    assert (ref["ref"], ref["translated"], ref["refroot"], ref["target"]) == ("/b", "../b", None, "/a2/a3/b")
    target = ref["from"]
    assert (target["path"], target["value"], target["status"]) == ("/a2/a3/b", "300", "resolved")
    assert [(s["kind"], s["line"], s.get("value")) for s in target["steps"]] == [("written", 7, None), ("overrides", 3, "100")]
    # in the prototype itself the same reference finds 100
    assert one(SPEC_7_3_4, "a/c/d")["steps"][1]["from"]["value"] == "100"


def test_a_reference_with_refroot_and_a_copied_subtree() -> None:
    xml = doc(["<a><v>", "<x>1</x></v></a>", "<b><w cdl:refroot='a' cdl:ref='v'/></b>"])
    w = one(xml, "b/w")
    assert w["value"] is None
    ref = w["steps"][1]
    assert (ref["kind"], ref["ref"], ref["translated"], ref["refroot"], ref["target"]) == ("reference", "v", "./v", "a", "/a/v")
    # a property copied with the target's value says so, and where it was written
    x = one(xml, "b/w/x")
    assert [(s["kind"], s["line"], s["target"]) for s in x["steps"]] == [("reference", 5, "/a/v/x")]
    assert brief(x["steps"][0]["from"]) == [("written", 4, "/a/v/x")]


# ---------------------------------------------------------------------------
# 7.3.5: a reference that selects several properties


def test_multi_node_reference_explains_each_property() -> None:
    xml = doc(
        [
            "<a><portList>",
            "  <port>80</port>",
            "  <port>8080</port></portList></a>",
            "<b><portList><port>8070</port>",
            "  <port cdl:refroot='a' cdl:ref='/portList/port'/></portList></b>",
        ]
    )
    found = explain(xml, "b/portList/port")
    assert [e["value"] for e in found] == ["8070", "80", "8080"]
    assert kinds(found[0]) == ["written"]
    # Each of the same-named siblings is named by its own path, and selected by it.
    assert [e["path"] for e in found] == ["/b/portList/port[1]", "/b/portList/port[2]", "/b/portList/port[3]"]
    assert [e["value"] for e in explain(xml, "b/portList/port[3]")] == ["8080"]
    for e, line, k in zip(found[1:], (4, 5), (1, 2)):
        assert [(s["kind"], s["line"]) for s in e["steps"]] == [("written", 7), ("reference", 7)]
        ref = e["steps"][1]
        assert (ref["ref"], ref["refroot"], ref["target"]) == ("/portList/port", "a", f"/a/portList/port[{k}]")
        assert ref["from"]["value"] == e["value"]
        assert ref["from"]["steps"][0]["line"] == line


# ---------------------------------------------------------------------------
# 7.3.6: an expression with its variable


def test_expression_with_its_variable() -> None:
    xml = doc(
        [
            "<MyServer><hostname>www.example.org</hostname>",
            "  <url>",
            "    <cdl:expression value-of=\"concat('http://', $host, '/')\">",
            "      <cdl:variable name='host' ref='/hostname'/></cdl:expression></url></MyServer>",
        ]
    )
    url = one(xml, "MyServer/url")
    assert url["value"] == "http://www.example.org/"
    assert kinds(url) == ["written", "expression"]
    step = url["steps"][1]
    assert (step["url"], step["line"], step["path"]) == ("mem.cdl", 5, "/MyServer/url")
    assert step["value_of"] == "concat('http://', $host, '/')"
    assert list(step["variables"]) == ["host"]
    host = step["variables"]["host"]
    assert (host["path"], host["value"]) == ("/MyServer/hostname", "www.example.org")
    assert brief(host) == [("written", 3, "/MyServer/hostname")]


# ---------------------------------------------------------------------------
# 7.6: parameterization

PAIR = doc(
    [
        "<server><hostname>localhost</hostname><port>4567</port></server>",
        "<serverPair><host1>localhost</host1><host2>localhost</host2>",
        "  <server1 cdl:extends='server'><hostname cdl:ref='/host1'/></server1>",
        "  <server2 cdl:extends='server'><hostname cdl:ref='/host2'/></server2></serverPair>",
        "<myPair cdl:extends='serverPair'>",
        "  <host1>one.example.com</host1><host2>two.example.com</host2></myPair>",
    ]
)


def test_parameterization() -> None:
    h = one(PAIR, "myPair/server1/hostname")
    assert h["value"] == "one.example.com"
    assert [(s["kind"], s["line"], s["path"]) for s in h["steps"]] == [
        ("written", 5, "/serverPair/server1/hostname"),
        ("reference", 5, "/myPair/server1/hostname"),
        ("inherited", 7, "/myPair"),
        ("overrides", 3, "/server/hostname"),
    ]
    ref = h["steps"][1]
    assert (ref["ref"], ref["translated"], ref["target"]) == ("/host1", "../host1", "/myPair/host1")
    host1 = ref["from"]
    assert host1["value"] == "one.example.com"
    assert [(s["kind"], s["line"], s.get("value")) for s in host1["steps"]] == [("written", 8, None), ("overrides", 4, "localhost")]
    assert h["steps"][3]["value"] == "localhost" and h["steps"][3]["from_list"] == "server"


# ---------------------------------------------------------------------------
# Appendix B: pending, then supplied


def test_appendix_b_pending_then_supplied() -> None:
    document = cdl.load(SAMPLES / "webapp" / "system.cdl")
    path = "WebApplication/t:Web/t:dbconnection/t:hostname"
    [before] = [e.to_data() for e in document.resolve().explain(path)]
    assert (before["path"], before["value"], before["status"]) == ("/" + path, None, "pending")
    assert kinds(before)[:2] == ["written", "pending"]
    pending = before["steps"][1]
    assert pending["waits_for"] == ["/WebApplication/t:DB/t:hostname"]
    assert pending["waiting"] == "reference"
    assert (pending["ref"], pending["translated"]) == ("/DB/hostname", "../../t:DB/t:hostname")
    assert pending["url"].endswith("webapp-template.cdl") and pending["line"] == 64
    [lazy] = [e.to_data() for e in document.resolve().explain("WebApplication/t:DB/t:hostname")]
    assert lazy["status"] == "pending" and lazy["steps"][1]["waiting"] == "value"

    values = {"WebApplication/t:DB/t:hostname": "db.example.org"}
    [after] = [e.to_data() for e in document.resolve(values).explain(path)]
    assert (after["value"], after["status"]) == ("db.example.org", "resolved")
    ref = next(s for s in after["steps"] if s["kind"] == "reference")
    assert ref["round"] == 1 and ref["target"] == "/WebApplication/t:DB/t:hostname"
    supplied = ref["from"]["steps"][1]
    assert supplied == {
        "kind": "supplied",
        "url": None,
        "line": None,
        "path": "/WebApplication/t:DB/t:hostname",
        "round": 1,
        "set": "WebApplication/t:DB/t:hostname",
        "value": "db.example.org",
    }
    # the second of two rounds
    rounds = [{"set": {"WebApplication/t:Web/t:hostname": "w"}}, {"set": values}]
    [later] = [e.to_data() for e in document.resolve(rounds=rounds).explain(path)]
    assert next(s for s in later["steps"] if s["kind"] == "reference")["from"]["steps"][1]["round"] == 2


def test_pending_lazy_reference_waits_for_its_release() -> None:
    xml = doc(["<a><b>1</b>", "<c cdl:ref='/b' cdl:lazy='true'/></a>"], part="system")
    c = one(xml, "a/c")
    assert c["status"] == "pending" and c["value"] is None
    assert [(s["kind"], s["line"], s.get("waiting"), s.get("waits_for")) for s in c["steps"]] == [
        ("written", 4, None, None),
        ("pending", 4, "release", ["/a/c"]),
    ]
    released = one(xml, "a/c", release=["a/c"])
    assert kinds(released) == ["written", "reference"] and released["steps"][1]["round"] == 1


# ---------------------------------------------------------------------------
# Selecting


def test_one_path_may_select_several_and_a_leading_slash_is_optional() -> None:
    xml = doc(["<a><p>1</p><p>2</p></a>"])
    assert [e["value"] for e in explain(xml, "a/p")] == ["1", "2"]
    assert explain(xml, "/a/p") == explain(xml, "a/p")


@pytest.mark.parametrize(
    ("path", "code", "suggested"),
    [
        ("a/prot", "SELECT_NOT_FOUND", "/a/port"),
        ("aa/port", "SELECT_NOT_FOUND", "/a"),
        ("a/zzz", "SELECT_NOT_FOUND", None),
        ("a//port", "BAD_SELECT", None),
        ("x:a", "BAD_SELECT", None),
        ("a/r/deeper", "SELECT_NOT_FOUND", None),  # below a pending reference
    ],
)
def test_a_path_that_selects_nothing(path: str, code: str, suggested: str | None) -> None:
    xml = doc(["<a><port>1</port><r cdl:ref='/port' cdl:lazy='true'/></a>"], part="system")
    with pytest.raises(cdl.CdlError) as info:
        load_text(xml).resolve().explain(path)
    error = info.value
    assert error.code == code and error.url == "mem.cdl" and error.path == path
    assert repr(path) in error.message
    if suggested is None:
        assert "did you mean" not in error.message
    else:
        assert error.message.endswith(f"did you mean {suggested}?")


def test_cli_path_that_selects_nothing(tomcat: Path) -> None:
    out = run_cli("explain", str(tomcat), "Tomcat/port")
    assert out.returncode == 1 and out.stdout == ""
    assert "[SELECT_NOT_FOUND]" in out.stderr and "'Tomcat/port'" in out.stderr
    assert "did you mean /Tomcat/tmpl:port?" in out.stderr
    out = run_cli("resolve", str(tomcat), "--select", "Tomcat/nothing")
    assert out.returncode == 1 and out.stdout == "" and "[SELECT_NOT_FOUND]" in out.stderr


# ---------------------------------------------------------------------------
# resolve --format json / --select


def test_resolve_json_is_to_data(tomcat: Path) -> None:
    out = run_cli("resolve", str(tomcat), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == cdl.load(tomcat).resolve().to_data()
    out = run_cli("resolve", str(tomcat), "--format", "json", "--system-only")
    assert json.loads(out.stdout) == cdl.load(tomcat).resolve().to_data(system_only=True)


def test_select_in_the_library() -> None:
    xml = doc(["<a><p>1</p><q><r>2</r><s>3</s></q></a>", "<b><p>4</p></b>"])
    res = load_text(xml).resolve()
    assert res.to_data(select=["b/p", "a/q/r"]) == {"configuration": {"a": {"q": {"r": "2"}}, "b": {"p": "4"}}}
    # a property inside another selected one is there once; document order
    assert res.to_data(select=["a/q/s", "a/q"]) == {"configuration": {"a": {"q": {"r": "2", "s": "3"}}}}
    xml_out = res.to_bytes(select=["a/p"], pretty=False).decode()
    assert "<a><p>1</p></a>" in xml_out and "<b>" not in xml_out and "<q>" not in xml_out
    assert res.to_data() == {"configuration": {"a": {"p": "1", "q": {"r": "2", "s": "3"}}, "b": {"p": "4"}}}
    assert len(res.tree(select=["a/p"])) == 1


def test_select_on_the_command_line(tomcat: Path) -> None:
    out = run_cli("resolve", str(tomcat), "--select", "Tomcat/tmpl:port", "--select", "/Tomcat/tmpl:maxThreads", "--format", "json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"system": {"Tomcat": {"tmpl:port": "8080", "tmpl:maxThreads": "200"}}}
    out = run_cli("resolve", str(tomcat), "--select", "Tomcat/tmpl:port")
    assert out.returncode == 0, out.stderr
    assert "<tmpl:port>8080</tmpl:port>" in out.stdout and "maxThreads" not in out.stdout
    assert cdl.load(tomcat).resolve().to_bytes(select=["Tomcat/tmpl:port"]).decode() == out.stdout
    target = tomcat.parent / "out.json"
    out = run_cli("resolve", str(tomcat), "--select", "Tomcat/tmpl:port", "--format", "json", "-o", str(target))
    assert out.returncode == 0 and out.stdout == "", out.stderr
    assert json.loads(target.read_text(encoding="utf-8")) == {"system": {"Tomcat": {"tmpl:port": "8080"}}}


# ---------------------------------------------------------------------------
# Cost: plain resolution records nothing


def test_explain_leaves_the_resolution_usable() -> None:
    res = load_text(PAIR).resolve()
    before = res.to_bytes()
    res.explain("myPair/server1/hostname")
    assert res.to_bytes() == before and b"prov" not in before


def test_every_step_has_kind_url_and_line() -> None:
    found = [*explain(PAIR, "myPair/server1/hostname"), *explain(HIERARCHICAL, "Other/WebServer/port")]
    stack = list(found)
    while stack:
        e = stack.pop()
        assert set(e) >= {"path", "value", "status", "steps"}
        for s in e["steps"]:
            assert {"kind", "url", "line"} <= set(s)
            assert s["line"] is None or isinstance(s["line"], int)
            if s["kind"] == "reference":
                stack.append(s["from"])
            if s["kind"] == "expression":
                stack.extend(s["variables"].values())


# ---------------------------------------------------------------------------
# The README's sessions are real

ROOT = Path(__file__).resolve().parent.parent


def _readme_blocks(lang: str) -> list[str]:
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## `cdl explain`")
    end = text.index("\n## ", start + 1)
    return re.findall(rf"```{lang}\n(.*?)```", text[start:end], re.DOTALL)


def test_readme_explain_sessions_are_real(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    sessions = _readme_blocks("console")
    assert len(sessions) == 2
    for session in sessions:
        command, _, expected = session.partition("\n")
        assert command.startswith("$ cdl ")
        out = run_cli(*command[len("$ cdl ") :].split())
        assert out.returncode == 0, out.stderr
        assert out.stdout == expected
    [contract] = _readme_blocks("json")
    data = json.loads(contract)
    assert data == [e.to_data() for e in cdl.load("samples/shop/system.cdl").resolve().explain(data[0]["path"])]


def test_a_replaced_reference_never_resolved_shows_its_path() -> None:
    res = cdl.load(SAMPLES / "shop" / "system.cdl").resolve()
    [domain] = [e.to_data() for e in res.explain("storefront/domain")]
    replaced = domain["steps"][1]
    assert (replaced["kind"], replaced["value"], replaced["ref"], replaced["refroot"]) == ("overrides", None, "/domain", "Defaults")


def test_lazy_expression_waits_for_its_release_then_computes() -> None:
    xml = doc(
        ["<a><p>2</p>", "<q><cdl:expression value-of='$x * 2'>", "<cdl:variable name='x' ref='/p' cdl:lazy='true'/></cdl:expression></q></a>"],
        part="system",
    )
    q = one(xml, "a/q")
    assert (q["status"], q["value"]) == ("pending", None)
    assert [(s["kind"], s["line"], s.get("waiting")) for s in q["steps"]] == [("written", 4, None), ("pending", 4, "release")]
    q = one(xml, "a/q", release=["a/q"])
    assert (q["status"], q["value"]) == ("resolved", "4")
    assert [(s["kind"], s["line"]) for s in q["steps"]] == [("written", 4), ("expression", 4)]
    assert q["steps"][1]["variables"]["x"]["value"] == "2"


def test_long_reference_chains_are_cut_and_marked() -> None:
    n = 60
    props = "".join(f"<p{i} cdl:ref='/p{i + 1}'/>" for i in range(n)) + f"<p{n}>end</p{n}>"
    e = one(doc([f"<a>{props}</a>"]), "a/p0")
    depth = 0
    while e["steps"] and e["steps"][-1]["kind"] == "reference":
        e = e["steps"][-1]["from"]
        depth += 1
    assert e["truncated"] is True and e["steps"] == [] and e["value"] == "end"
    assert 30 <= depth < n
    text = load_text(doc([f"<a>{props}</a>"])).resolve().explain("a/p0")
    assert "explain this path for more" in "".join(e.to_text() for e in text)


def test_a_prototype_reference_nothing_needed_is_resolved_when_explained() -> None:
    # the main document never needs shop:Shop's own domain; explaining it resolves it
    res = cdl.load(SAMPLES / "shop" / "system.cdl").resolve()
    [domain] = [e.to_data() for e in res.explain("shop:Shop/domain")]
    assert (domain["value"], domain["status"]) == ("shop.example.com", "resolved")
    assert [(s["kind"], s["line"]) for s in domain["steps"]] == [("written", 66), ("reference", 66)]
    assert domain["steps"][1]["target"] == "/Defaults/domain"
    [url] = [e.to_data() for e in res.explain("shop:Shop/api/databaseUrl")]
    assert url["status"] == "pending" and url["steps"][1]["waits_for"] == ["/Shop/db/hostname"]
    with pytest.raises(cdl.CdlError, match=r"did you mean /shop:Shop\?"):
        res.explain("Shop/domain")


def test_a_copy_of_a_copy_names_each_reference() -> None:
    xml = doc(
        [
            "<a><v><x><y>1</y></x></v></a>",
            "<b><w cdl:refroot='a' cdl:ref='v'/></b>",
            "<c><z cdl:refroot='b' cdl:ref='w'/></c>",
        ]
    )
    y = one(xml, "c/z/x/y")
    assert y["value"] == "1"
    [ref] = y["steps"]
    assert (ref["kind"], ref["line"], ref["path"], ref["target"]) == ("reference", 5, "/c/z", "/b/w/x/y")
    [inner] = ref["from"]["steps"]
    assert (inner["kind"], inner["line"], inner["path"], inner["target"]) == ("reference", 4, "/b/w", "/a/v/x/y")
    assert brief(inner["from"]) == [("written", 3, "/a/v/x/y")]


def test_a_copy_holding_an_earlier_copy_names_the_latest_reference_first() -> None:
    xml = doc(
        [
            "<a><v><x>1</x></v></a>",
            "<b><q><w cdl:refroot='a' cdl:ref='v'/></q></b>",
            "<c><z cdl:refroot='b' cdl:ref='q'/></c>",
        ]
    )
    x = one(xml, "c/z/w/x")
    [ref] = x["steps"]
    assert (ref["line"], ref["path"], ref["target"]) == (5, "/c/z", "/b/q/w/x")
    [inner] = ref["from"]["steps"]
    assert (inner["line"], inner["path"], inner["target"]) == (4, "/b/q/w", "/a/v/x")
