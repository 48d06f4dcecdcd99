"""A resolution that takes over the top level lists of a resolution of an
earlier version (``engine.phases.take_over``, ``resolution_after``; issues 31
and 32: an edit costs what it reaches) gives what a whole resolution gives:
held to one on random documents and chains of random edits (values, lines
added, lists added and dropped, prototypes and refroots pointed elsewhere,
new references, errors made and mended), in the output, the pending report,
the warnings, the plan, the errors and what each list read.
"""

from __future__ import annotations

import os
import random
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdl
from cdl.engine.document import load_with, loaded_of
from cdl.engine.phases import Earlier, Loaded, copy_working
from cdl.engine.resolution import Resolution, check_plan, hand_over, resolution_after, resolution_of
from cdl.loading.imports import LoadOptions
from test_diff import fast_paths
from test_list_reads import documents, write_files

from .inside import counted_attempts

EXAMPLES = int(os.environ.get("CDL_TAKEOVER_EXAMPLES", "60"))
CDL = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"


def _at(rng: random.Random, text: str, what: str) -> int | None:
    places = [i for i in range(len(text)) if text.startswith(what, i)]
    return rng.choice(places) if places else None


def edit(rng: random.Random, files: dict[str, str]) -> dict[str, str]:
    """One or two edits of either document."""
    files = dict(files)
    for _ in range(rng.randint(1, 2)):
        name = rng.choice(sorted(files))
        text = files[name]
        kind = rng.choice(
            ["value", "value", "value", "line", "sibling", "drop", "extends", "refroot", "list", "unlist", "ref", "error", "lazy", "required", "wait", "wait", "ancestor"]
        )
        if kind in ("wait", "ancestor"):
            files[name] = _wait(rng, text, kind == "ancestor")
            continue
        at = _at(rng, text, {"value": "<a>", "line": "<a>", "sibling": "<b>", "drop": "<b>", "ref": "<a>", "lazy": "<a>"}.get(kind, "<"))
        if at is None:
            continue
        if kind == "value":
            text = text[: at + 3] + str(rng.randint(4, 9)) + text[at + 4 :]
        elif kind == "line":
            text = text[: at + 3] + "\n" + text[at + 3 :]
        elif kind == "sibling":
            text = text[:at] + "<b>7</b>" + text[at:]
        elif kind == "drop":
            end = text.index("</b>", at) + 4
            text = text[:at] + text[end:]
        elif kind == "extends":
            old, new = rng.sample(["l:T0", "l:T1", "l:T2", "C0", "C1"], 2)
            text = text.replace(f'cdl:extends="{old}"', f'cdl:extends="{new}"', 1)
        elif kind == "refroot":
            old, new = rng.sample(["l:T0", "l:T1", "C0", "S0", "S1"], 2)
            text = text.replace(f'refroot="{old}"', f'refroot="{new}"', 1)
        elif kind == "list":
            part = rng.choice(["</cdl:configuration>", "</cdl:system>"])
            text = text.replace(part, f"  <Extra{rng.randint(0, 3)}>\n    <a>{rng.randint(0, 9)}</a>\n  </Extra{rng.randint(0, 3)}>\n{part}", 1)
        elif kind == "unlist":
            lines = text.split("\n")
            starts = [i for i, line in enumerate(lines) if line.startswith("  <") and not line.startswith("  </")]
            if starts:
                i = rng.choice(starts)
                text = "\n".join(lines[:i] + lines[i + 3 :])
        elif kind == "ref":
            text = text[:at] + f'<q cdl:ref="../a{rng.randint(0, 2)}"/><a0>{rng.randint(0, 2)}</a0>' + text[at:]
        elif kind == "error":
            text = text.replace('cdl:ref="/a"', 'cdl:ref="/nothing"', 1) if rng.random() < 0.5 else text.replace('extends="', 'extends="Nope', 1)
        elif kind == "required":
            text = text.replace('<u cdl:use="required">1</u>', '<u cdl:use="required"/>', 1)
        elif kind == "lazy":
            text = text[:at] + '<z cdl:lazy="true"/><y cdl:ref="../z"/>' + text[at:]
        files[name] = text
    return files


def _wait(rng: random.Random, text: str, ancestor: bool) -> str:
    """A system list made to wait for a lazy value of another (which may
    make a cycle of waits) or, with ``ancestor``, a component in a list
    made to wait for a lazy value of the list (a wait for an ancestor)."""
    starts = [i for i in range(len(text)) if text.startswith("\n  <S", i)]
    if not starts:
        return text
    waiter = rng.choice(starts) + 1
    owner = waiter if ancestor else rng.choice(starts) + 1
    name = re.match(r"\s*<(\w+)", text[owner:])
    assert name is not None
    wait = '<k><m>1</m><w cdl:ref="../wp"/></k>' if ancestor else f'<ww cdl:refroot="{name[1]}" cdl:ref="/wp"/>'
    lazy = '<wp cdl:lazy="true"/>'
    places = [(text.index(">", waiter) + 1, wait)]
    if not text.startswith(lazy, text.index(">", owner) + 1):
        places.append((text.index(">", owner) + 1, lazy))
    if not ancestor and rng.random() < 0.4:  # and the other way round: a cycle at once
        places[0] = (places[0][0], wait + lazy)
        back = re.match(r"\s*<(\w+)", text[waiter:])
        assert back is not None
        places.append((text.index(">", owner) + 1, f'<ww cdl:refroot="{back[1]}" cdl:ref="/wp"/>'))
    # Inserted after the start tags, the later place first: lines stay where they were.
    for at, what in sorted(places, reverse=True):
        text = text[:at] + what + text[at:]
    return text


def _seen(resolution: Resolution) -> Any:
    """What a user can read of a resolution."""
    try:
        plan: Any = [(c.path, sorted(c.waits_for)) for c in resolution.plan().components()]
    except cdl.CdlError as error:
        plan = str(error)
    return (
        resolution.warnings,
        [str(p) for p in resolution.pending],
        [str(p) for p in resolution.system_pending],
        plan,
        resolution.to_bytes(),
    )


def _resolved(main: Path, earlier: Earlier | None) -> tuple[Earlier | None, Any, Any]:
    """What the resolution of ``main`` taking over from ``earlier`` shows
    (seen on a copy of its trees), what each list read, and its trees, for
    the next; the error when it fails. Taking over, it loads as ``cdl lsp``
    does: continuing the tables of the load ``earlier`` was made from."""
    try:
        loaded = loaded_of(cdl.load(str(main)) if earlier is None else load_with(str(main), LoadOptions(), continuing=earlier.loaded))
    except cdl.CdlError as error:
        return None, str(error), None
    try:
        resolution = resolution_after(loaded, earlier)
    except cdl.CdlError as error:
        return None, str(error), None
    try:
        check_plan(resolution)  # as cdl lsp does: only the lists that can have an error, when known
        checked = None
    except cdl.CdlError as error:
        checked = str(error)
    trees = hand_over(resolution)
    assert trees is not None
    ws = trees.working[0]
    assert ws.reads is not None
    seen = _seen(resolution_of(loaded, (), working=copy_working(trees.working)))
    plan = seen[3]
    assert checked == (plan if isinstance(plan, str) else None)
    return trees, seen, ws.reads.by_name(ws.lists)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30), st.lists(st.integers(0, 1 << 30), min_size=1, max_size=4))
def test_taking_over_is_resolving_whole(seed: int, edits: list[int]) -> None:
    files = documents(random.Random(seed), lines=True)
    with tempfile.TemporaryDirectory() as tmp:
        earlier, _, _ = _resolved(write_files(files, Path(tmp) / "v0"), None)
        for step, number in enumerate(edits, 1):
            files = edit(random.Random(number), files)
            main = write_files(files, Path(tmp) / f"v{step}")
            _, whole, whole_reads = _resolved(main, None)
            earlier, taking, taking_reads = _resolved(main, earlier)
            assert taking == whole
            assert taking_reads == whole_reads


def _system(n: int, value: int, extra_line: bool = False) -> str:
    """``n`` components over a few lines each, each reading the one before it."""
    lists = []
    for i in range(n):
        ref = f'<peer cdl:refroot="S{i - 1}" cdl:ref="/port"/>' if i else ""
        port = f"<port>{value if i == n // 2 else i}</port>"
        if extra_line and i == n // 2:
            port = port.replace("<port>", "<port>\n")
        lists.append(f'  <S{i} cdl:extends="T">\n    {port}{ref}\n  </S{i}>\n')
    return (
        f'<cdl:cdl xmlns:cdl="{CDL}">\n<cdl:configuration>\n  <T>\n    <host>h</host><pid cdl:lazy="true"/>\n  </T>\n'
        f"</cdl:configuration>\n<cdl:system>\n{''.join(lists)}</cdl:system>\n</cdl:cdl>\n"
    )


def _attempts(tmp: Path, before: str, after: str, continuing: bool = False, fast: bool = True) -> tuple[int, int]:
    """Items the resolver was handed for ``after``: resolving it whole, and
    taking over from a resolution of ``before`` (its load continuing the
    tables of ``before``'s, with ``continuing``); the outputs agree. With
    the fast paths on (``fast``) whatever the environment says: taking over
    is a specialisation."""
    first, second = tmp / "a.cdl", tmp / "b.cdl"
    first.write_text(before)
    second.write_text(after)
    with fast_paths(fast):
        first_loaded = loaded_of(cdl.load(str(first)))
        earlier = resolution_after(first_loaded)
        loaded = loaded_of(load_with(str(second), LoadOptions(), continuing=first_loaded if continuing else None))
        with counted_attempts() as whole:
            expected = resolution_after(loaded).to_bytes()
        with counted_attempts() as taking:
            got = resolution_after(loaded, hand_over(earlier))
    assert got.to_bytes() == expected
    return whole[0], taking[0]


def test_an_edit_resolves_the_lists_it_reaches(tmp_path: Path) -> None:
    # A value of S50 is read by S51, which is read by S52, ...: the lists
    # from S50 on are resolved again (with S49, whose closing line the edit
    # is next to), the 49 before it are taken over.
    whole, taking = _attempts(tmp_path, _system(100, 7), _system(100, 8))
    assert taking < whole * 0.6
    # A line added moves every list after it: those are resolved again.
    whole, taking = _attempts(tmp_path, _system(100, 7), _system(100, 7, extra_line=True))
    assert taking < whole * 0.6
    # The same text: nothing is resolved again.
    whole, taking = _attempts(tmp_path, _system(100, 7), _system(100, 7))
    assert taking == 0 < whole


def test_a_reference_written_anew_mid_system_is_taken_over_when_the_load_continues_the_tables(tmp_path: Path) -> None:
    # A reference text no list wrote before gets a new table entry: loaded
    # afresh, the entries after its place move (the lists after it read
    # other indexes, and nothing is taken over); continuing the earlier
    # load's tables, it is appended and only what it reaches is resolved.
    before = _system(100, 7)
    at = before.index("<port>", before.index("<S50 "))
    after = before[:at] + '<seen cdl:refroot="S10" cdl:ref="/host"/>' + before[at:]
    whole, fresh = _attempts(tmp_path, before, after)
    assert fresh == whole
    whole, taking = _attempts(tmp_path, before, after, continuing=True)
    assert taking < whole * 0.6


def _one_per_line(n: int, value: int) -> str:
    """``n`` components reading no other list, each written on a line of its own."""
    lists = "".join(f'  <S{i} cdl:extends="T"><port>{value if i == 0 else i}</port><at cdl:ref="/host"/></S{i}>\n' for i in range(n))
    return (
        f'<cdl:cdl xmlns:cdl="{CDL}">\n<cdl:configuration>\n  <T>\n    <host>h</host>\n  </T>\n'
        f"</cdl:configuration>\n<cdl:system>\n{lists}</cdl:system>\n</cdl:cdl>\n"
    )


def test_an_edit_on_the_line_where_a_list_parent_s_first_list_begins_takes_the_others_over(tmp_path: Path) -> None:
    # cdl:system's start tag ends on the line before the edit: the 99 lists
    # after S0, written in the bytes both versions end with, are taken over.
    whole, taking = _attempts(tmp_path, _one_per_line(100, 7), _one_per_line(100, 8))
    assert taking < whole * 0.1


def test_no_take_over_without_the_fast_paths(tmp_path: Path) -> None:
    whole, taking = _attempts(tmp_path, _system(20, 7), _system(20, 8), fast=False)
    assert taking == whole


def test_an_earlier_resolution_gives_up_its_trees_and_still_answers(tmp_path: Path) -> None:
    path = tmp_path / "a.cdl"
    path.write_text(_system(10, 7))
    loaded = loaded_of(cdl.load(str(path)))
    earlier = resolution_after(loaded)
    expected = earlier.to_bytes()
    earlier = resolution_after(loaded)
    resolution_after(loaded, hand_over(earlier))
    assert hand_over(earlier) is None  # given up once
    assert earlier.to_bytes() == expected  # resolved again


def _waiting_on_each_other(first_value: str) -> str:
    return (
        f'<cdl:cdl xmlns:cdl="{CDL}">\n<cdl:system>\n  <Z>\n    <v>{first_value}</v>\n  </Z>\n  <Y>\n    <v>2</v>\n  </Y>\n'
        '  <A>\n    <p cdl:lazy="true"/><w cdl:refroot="B" cdl:ref="/p"/>\n  </A>\n'
        '  <B>\n    <p cdl:lazy="true"/><w cdl:refroot="A" cdl:ref="/p"/>\n  </B>\n</cdl:system>\n</cdl:cdl>\n'
    )


def test_a_list_moved_to_other_lines_is_resolved_again(tmp_path: Path) -> None:
    # The plan's cycle names A and B by their lines: a line added in Z moves
    # them (Y, right after Z, is resolved again anyway), and what names them
    # must say where they are now.
    first, second = tmp_path / "a.cdl", tmp_path / "b.cdl"
    first.write_text(_waiting_on_each_other("1"))
    second.write_text(_waiting_on_each_other("1\n"))
    earlier = resolution_after(loaded_of(cdl.load(str(first))))
    loaded = loaded_of(cdl.load(str(second)))
    messages = []
    for resolution in (resolution_after(loaded), resolution_after(loaded, hand_over(earlier))):
        try:
            resolution.plan()
        except cdl.CdlError as error:
            messages.append(str(error))
    assert len(messages) == 2 and "b.cdl:11:" in messages[0] and "b.cdl:14)" in messages[0] and messages[0] == messages[1]


def _loads(tmp: Path, texts: list[str]) -> list[Loaded]:
    """``texts`` loaded in turn, each load continuing the tables of the one
    before (a specialisation: with the fast paths on, whatever the environment says)."""
    found: list[Loaded] = []
    for k, text in enumerate(texts):
        path = tmp / f"v{k}.cdl"
        path.write_text(text)
        with fast_paths(True):
            found.append(loaded_of(load_with(str(path), LoadOptions(), continuing=found[-1] if found else None)))
    return found


def test_tables_continued_over_versions_hold_what_is_written_once(tmp_path: Path) -> None:
    # Each version written alike finds every entry again, expressions too
    # (one entry per place written: their variables are kept per entry).
    text = (
        f'<cdl:cdl xmlns:cdl="{CDL}"><cdl:configuration><T><a>1</a><b cdl:ref="/a"/>'
        '<c><cdl:expression value-of="$x + 1"><cdl:variable name="x" ref="../a"/></cdl:expression></c></T>'
        '</cdl:configuration><cdl:system><S cdl:extends="T"/></cdl:system></cdl:cdl>'
    )
    loads = _loads(tmp_path, [text] * 5)
    sizes = {(len(t.refs), len(t.names), len(t.exprs)) for t in (loaded.tables for loaded in loads)}
    assert sizes == {(len(loads[0].tables.refs), len(loads[0].tables.names), 1)}
    # Text no version writes any more is left behind, and once it is over
    # half of the tables, the next load begins afresh.
    versions = [text.replace('ref="/a"', f'ref="/a{k}"').replace("<a>", f"<a{k}>").replace("</a>", f"</a{k}>") for k in range(400)]
    loads = _loads(tmp_path, versions)
    # Each finds 4 entries (2 references, T, the expression) and adds 1: continued up to 2 x 4 + 256.
    assert max(len(t.refs) + len(t.names) + len(t.exprs) for t in (loaded.tables for loaded in loads)) <= 2 * 4 + 256 + 1
    assert any(len(b.tables.refs) < len(a.tables.refs) for a, b in zip(loads, loads[1:]))  # began afresh


def _checked(texts: list[str], tmp: Path) -> list[tuple[str | None, int | None]]:
    """Each version of ``texts`` resolved taking over from the one before, as
    ``cdl lsp`` does: the error its plan check reports (None: none), and how
    many lists the check planned (None: every list)."""
    seen: list[tuple[str | None, int | None]] = []
    earlier = None
    with fast_paths(True):
        for k, text in enumerate(texts):
            path = tmp / "a.cdl"
            path.write_text(text)
            loaded = loaded_of(load_with(str(path), LoadOptions(), continuing=None if earlier is None else earlier.loaded))
            resolution = resolution_after(loaded, earlier)
            ws = resolution._working()
            within = None if ws.plan_within is None else len(ws.plan_within)
            try:
                check_plan(resolution)
                error = None
            except cdl.CdlError as exc:
                error = exc.code
            seen.append((error, within))
            earlier = hand_over(resolution)
            assert earlier is not None, k
    return seen


def test_a_plan_check_plans_the_lists_resolved_again_and_finds_what_a_plan_finds(tmp_path: Path) -> None:
    def version(z: str, cycle: bool) -> str:
        text = _waiting_on_each_other(z)
        return text if cycle else text.replace('<w cdl:refroot="A" cdl:ref="/p"/>', "")

    seen = _checked([version("1", False), version("5", False), version("5", True), version("6", True)], tmp_path)
    assert seen == [
        (None, None),  # the first version: every list planned
        (None, 2),  # a value of Z edited: Z and Y (whose start tag ends on the line after Z's end) are planned
        ("PLAN_CYCLE", 2),  # B made to wait for A: B and A (which reads B) are planned
        ("PLAN_CYCLE", None),  # Z edited again: the earlier plan found a cycle, every list is planned
    ]
