"""A diff and an update compare only the top level lists that changed or read
one that did (``model.reads``, recorded by the resolver; issue 32, point 4):
held to the comparison of every list (``CDL_NO_FAST_PATHS=1``) on random
documents and random edits: two documents (one imported, with its own
targetNamespace), chains of cdl:extends, cdl:refroot into the other
document, same-named siblings, expressions, lazy values, edits in either
document. Each diff is also the oracle's (``test_diff.check_exact``).
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cdl
from test_diff import check_exact, fast_paths

EXAMPLES = int(os.environ.get("CDL_READS_EXAMPLES", "60"))
CDL = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"


def list_text(rng: random.Random, name: str, protos: list[str], others: list[str], lazy: bool, lines: bool = False) -> str:
    """One top level list: a few values (same-named siblings among them), and
    perhaps a prototype, references to other lists and an expression; with
    ``lines``, over three lines, and perhaps a reference to a lazy value and
    a required property too."""
    extends = f' cdl:extends="{rng.choice(protos)}"' if protos and rng.random() < 0.7 else ""
    body = [f"<a>{rng.randint(0, 3)}</a>"]
    if rng.random() < 0.5:
        body.append(f"<b>{rng.randint(0, 3)}</b><b>{rng.randint(0, 3)}</b>")
    if others and rng.random() < 0.6:
        body.append(f'<r cdl:refroot="{rng.choice(others)}" cdl:ref="/a"/>')
    if others and rng.random() < 0.3:
        body.append(
            '<e><cdl:expression value-of="concat($x, \'-\', $y)">'
            f'<cdl:variable name="x" refroot="{rng.choice(others)}" ref="/a"/>'
            '<cdl:variable name="y" ref="/a"/></cdl:expression></e>'
        )
    if rng.random() < 0.3:
        body.append('<n><c>1</c><d cdl:ref="../a"/></n>')
    if lazy and rng.random() < 0.3:
        body.append('<p cdl:lazy="true"/>')
    if not lines:
        return f"<{name}{extends}>{''.join(body)}</{name}>"
    if lazy and rng.random() < 0.2:
        body.append('<w cdl:ref="/p"/>')
    if rng.random() < 0.3:
        body.append('<u cdl:use="required">1</u>')
    return f"  <{name}{extends}>\n    {''.join(body)}\n  </{name}>\n"


def documents(rng: random.Random, lines: bool = False) -> dict[str, str]:
    """An imported document of templates (in ``urn:lib``, written ``l:``) and
    a main document with templates of its own and a system; with ``lines``,
    each part and each list on lines of its own, and more lists."""
    lib_names = [f"T{i}" for i in range(rng.randint(1, 4))]
    lib = [list_text(rng, n, lib_names[:i], lib_names[:i], False, lines) for i, n in enumerate(lib_names)]
    qualified = [f"l:{n}" for n in lib_names]
    conf_names = [f"C{i}" for i in range(rng.randint(0, 3 if lines else 2))]
    conf = [
        list_text(rng, n, qualified + conf_names[:i], qualified + conf_names[:i], lines and rng.random() < 0.3, lines)
        for i, n in enumerate(conf_names)
    ]
    sys_names = [f"S{i}" for i in range(rng.randint(2, 8 if lines else 6))]
    readable = qualified + conf_names
    system = [list_text(rng, n, qualified + conf_names, readable + sys_names[:i], True, lines) for i, n in enumerate(sys_names)]
    nl = "\n" if lines else ""
    return {
        "lib.cdl": f'<cdl:cdl xmlns:cdl="{CDL}" targetNamespace="urn:lib">{nl}<cdl:configuration>{nl}{"".join(lib)}'
        f"</cdl:configuration>{nl}</cdl:cdl>{nl}",
        "main.cdl": f'<cdl:cdl xmlns:cdl="{CDL}" xmlns:l="urn:lib">{nl}<cdl:import location="lib.cdl"/>{nl}'
        f"<cdl:configuration>{nl}{''.join(conf)}</cdl:configuration>{nl}<cdl:system>{nl}{''.join(system)}</cdl:system>{nl}</cdl:cdl>{nl}",
    }


def edit(rng: random.Random, files: dict[str, str]) -> dict[str, str]:
    """One to three small edits of either document: a value, a sibling added
    or dropped, a prototype or a refroot pointed elsewhere, a list added."""
    files = dict(files)
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(sorted(files))
        text = files[name]
        kind = rng.choice(["value", "value", "sibling", "drop", "extends", "refroot", "list"])
        if kind == "value" and "<a>" in text:
            at = rng.choice([i for i in range(len(text)) if text.startswith("<a>", i)])
            text = text[: at + 3] + str(rng.randint(4, 9)) + text[at + 4 :]
        elif kind == "sibling" and "<b>" in text:
            text = text.replace("<b>", "<b>7</b><b>", 1)
        elif kind == "drop" and "</b><b>" in text:
            text = text.replace("</b><b>", "</b><!-- --><c>1</c><b>", 1)
        elif kind == "extends" and 'cdl:extends="' in text:
            text = text.replace('cdl:extends="l:T0"', 'cdl:extends="l:T1"', 1) if rng.random() < 0.5 else text
        elif kind == "refroot" and 'refroot="' in text:
            text = text.replace('refroot="l:T1"', 'refroot="l:T0"', 1)
        elif kind == "list":
            part = "</cdl:configuration>"
            text = text.replace(part, f"<Extra><a>{rng.randint(0, 9)}</a></Extra>{part}", 1)
        files[name] = text
    return files


def write_files(files: dict[str, str], directory: Path) -> Path:
    """``files`` (name -> text) written in ``directory``; the main document's path."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory / "main.cdl"


def _updated(old_main: Path, new_main: Path, order: int) -> tuple[list[str], dict[str, Any]] | str:
    """Deploy the old version whole (in an order drawn from ``order``),
    update it to the new one: what became ready and the status; the error
    code when a version is refused."""
    rng = random.Random(order)
    try:
        deployment = cdl.load(str(old_main)).deploy()
        while ready := deployment.ready():
            path = rng.choice(ready)
            comp = deployment.status(path).components[0]
            deployment.deployed(path, {p: f"v{order}:{p}" for p in comp.supplies}, list(comp.releases))
        ready = deployment.update(cdl.load(str(new_main)))
    except cdl.CdlError as error:
        return error.code
    return ready, deployment.status().to_data()


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 1 << 30), st.integers(0, 1 << 30))
def test_diff_and_update_compare_what_the_reads_reach_as_every_list(seed: int, edits: int) -> None:
    old = documents(random.Random(seed))
    new = edit(random.Random(edits), old)
    with tempfile.TemporaryDirectory() as tmp:
        old_main, new_main = write_files(old, Path(tmp) / "old"), write_files(new, Path(tmp) / "new")
        check_exact(old_main, new_main, [])  # the oracle, and both modes alike
        fast = _updated(old_main, new_main, edits)
        with fast_paths(False):
            slow = _updated(old_main, new_main, edits)
        assert fast == slow
