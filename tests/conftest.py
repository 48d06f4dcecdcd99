"""Shared helpers for the unit tests.

- :func:`cdl_doc` wraps a body in a ``cdl:cdl`` root with the CDL namespace declared.
- :func:`config` / :func:`system` wrap top level lists in a whole document.
- :func:`resolve_text` loads a document from text (bytes) and resolves it.
- :func:`render` writes an element compactly (prefix:local names, attributes
  sorted, no namespace declarations), so expected results read like the spec's.
- :func:`list_xml` / :func:`lists_xml` render resolved top level lists.
- the ``write_docs`` fixture writes several small documents into ``tmp_path``
  and returns the path of the first (the main document).
- :func:`probes` finds the bad-input probes beside the repository
  (:data:`PROBES`, with the code each is refused with in :data:`PROBE_CODES`).
- :func:`journal_records` reads a deployment journal as docs/semantics.md
  defines it (every checksum checked); :func:`journal_line` and
  :func:`append_record` write a line the way a writer would (to forge one).
- :func:`fast_paths` runs a body with the engine's fast paths on or off
  (:data:`FAST_PATHS_OFF`, the documented switch); the ``fast_paths_on``
  fixture turns them on for a test whatever the environment says.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

import cdl

#: The repository's benchmarks/ directory: the synthetic system's generator
#: (benchmarks/synthetic.py) is a benchmark tool that some tests use too.
BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
if BENCHMARKS.is_dir() and str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
XSD_NS = "http://www.w3.org/2001/XMLSchema"
ENGINE_NS = "urn:x-cdl-engine:internal"
CDL_DECL = f'xmlns:cdl="{CDL_NS}"'

#: The environment variable that switches every fast path off (any value but
#: empty or ``0``; docs/performance.md, "The switch").
FAST_PATHS_OFF = "CDL_NO_FAST_PATHS"

#: The bad-input probes of the acceptance criteria. They live outside the
#: repository, in the ``shared/`` directory beside its clone, where CI puts a
#: copy of it too.
PROBES = Path(__file__).resolve().parent.parent.parent / "shared" / "probes" / "bad"

#: Each probe, and the code of the error it is refused with.
PROBE_CODES = {
    "bad-expression.cdl": "BAD_EXPRESSION",
    "bad-lazy.cdl": "BAD_LAZY",
    "bad-path.cdl": "BAD_PATH",
    "bad-prefix.cdl": "BAD_QNAME",
    "binary.cdl": "XML_SYNTAX",
    "empty.cdl": "XML_SYNTAX",
    "extends-loop.cdl": "EXTENDS_CYCLE",
    "ref-loop.cdl": "REF_CYCLE",
    "remote-import.cdl": "IMPORT_REFUSED",
    "traversal-import.cdl": "IMPORT_REFUSED",
    "truncated.cdl": "XML_SYNTAX",
    "xxe.cdl": "XML_DTD",
}


def probes() -> Path:
    """The probes' directory (:data:`PROBES`).

    When it is absent, the calling test fails under CI (the environment
    variable ``CI`` set, as CI runs with a copy of ``shared/`` beside the
    clone), and is skipped elsewhere: a checkout on its own lacks them.
    """
    if PROBES.is_dir():
        return PROBES
    message = f"no probes directory at {PROBES}"
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false"):
        pytest.fail(f"{message}, and CI is set: CI must have a copy of shared/ beside the clone")
    pytest.skip(message)


def cdl_doc(body: str, attrs: str = "") -> str:
    """A ``cdl:cdl`` document around ``body``; ``attrs`` adds root attributes/declarations."""
    return f'<cdl:cdl {CDL_DECL} {attrs}>{body}</cdl:cdl>'


def config(lists: str, attrs: str = "") -> str:
    """A document whose cdl:configuration holds ``lists``."""
    return cdl_doc(f"<cdl:configuration>{lists}</cdl:configuration>", attrs)


def system(lists: str, attrs: str = "", configuration: str | None = None) -> str:
    """A document whose cdl:system holds ``lists`` (and optionally a configuration)."""
    conf = "" if configuration is None else f"<cdl:configuration>{configuration}</cdl:configuration>"
    return cdl_doc(f"{conf}<cdl:system>{lists}</cdl:system>", attrs)


def load_text(xml: str | bytes, **kw: Any) -> cdl.Document:
    data = xml.encode("utf-8") if isinstance(xml, str) else xml
    kw.setdefault("name", "mem.cdl")
    return cdl.load(data, **kw)


def resolve_text(
    xml: str | bytes,
    values: Mapping[str, str] | None = None,
    *,
    release: tuple[str, ...] | list[str] = (),
    rounds: Any = (),
    **kw: Any,
) -> cdl.Resolution:
    """Load ``xml`` (named ``mem.cdl`` in messages) and resolve it."""
    return load_text(xml, **kw).resolve(values, release=release, rounds=rounds)


def qname_of(el: etree._Element) -> str:
    tag = el.tag
    if not isinstance(tag, str):
        return "?"
    if tag.startswith("{"):
        uri, local = tag[1:].split("}", 1)
        prefix = el.prefix
        return f"{prefix}:{local}" if prefix else local
    return tag


def _attr_name(el: etree._Element, key: str) -> str:
    if not key.startswith("{"):
        return key
    uri, local = key[1:].split("}", 1)
    if uri == CDL_NS:
        return f"cdl:{local}"
    for prefix, u in (el.nsmap or {}).items():
        if u == uri and prefix:
            return f"{prefix}:{local}"
    return key


def render(el: etree._Element) -> str:
    """Compact XML of ``el``: names as prefix:local, attributes sorted, no xmlns."""
    # Attribute order carries no meaning in XML: sort by the written name.
    pairs = sorted((_attr_name(el, k), v) for k, v in el.attrib.items())
    attrs = "".join(f' {k}="{v}"' for k, v in pairs)
    name = qname_of(el)
    inner = (el.text or "") + "".join(render(c) + (c.tail or "") for c in el)
    if not inner and len(el) == 0:
        return f"<{name}{attrs}/>"
    return f"<{name}{attrs}>{inner}</{name}>"


def list_elements(res: cdl.Resolution, part: str | None = None) -> list[etree._Element]:
    """Resolved top level lists (of ``part``, 'configuration' or 'system', or both)."""
    tree = res.tree()
    found: list[etree._Element] = []
    for p in tree:
        if part is None or p.tag == f"{{{CDL_NS}}}{part}":
            if p.tag in (f"{{{CDL_NS}}}configuration", f"{{{CDL_NS}}}system"):
                found.extend(p)
    return found


def lists_xml(res: cdl.Resolution, part: str | None = None) -> list[str]:
    return [render(el) for el in list_elements(res, part)]


def list_xml(res: cdl.Resolution, name: str) -> str:
    """The rendered resolved top level list whose written name (prefix:local) is ``name``."""
    matches = [el for el in list_elements(res) if qname_of(el) == name]
    assert len(matches) == 1, f"{len(matches)} lists named {name!r} in {lists_xml(res)}"
    return render(matches[0])


def codes(error: cdl.CdlError) -> list[str]:
    return [e.code for e in error.errors]


@pytest.fixture
def write_docs(tmp_path: Path) -> Callable[..., Path]:
    """``write_docs({"main.cdl": text, "sub/t.cdl": text, ...})`` -> path of the first document.

    Paths are relative to ``tmp_path`` (subdirectories are created).
    """

    def write(docs: Mapping[str, str | bytes], base: Path | None = None) -> Path:
        root = base or tmp_path
        first: Path | None = None
        for name, text in docs.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(text, bytes):
                path.write_bytes(text)
            else:
                path.write_text(text, encoding="utf-8")
            if first is None:
                first = path
        assert first is not None
        return first

    return write


def journal_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of the (version 2) journal at ``path``, its header first,
    read by the format's definition: each line is JSON text, a space and
    the CRC-32 of the JSON texts of every line so far, in 8 lowercase
    hexadecimal digits."""
    records, checksum = [], 0
    data = Path(path).read_bytes()
    assert data.endswith(b"\n")
    for line in data[:-1].split(b"\n"):
        text, space, written = line[:-9], line[-9:-8], line[-8:]
        checksum = zlib.crc32(text, checksum)
        assert space == b" " and written == b"%08x" % checksum, line
        records.append(json.loads(text))
    return records


def journal_line(record: Mapping[str, Any] | bytes, before: bytes) -> bytes:
    """``record`` (or JSON text) as the line after the journal bytes
    ``before`` (whole lines), with the checksum a writer would give it."""
    checksum = 0
    for line in before.splitlines():
        checksum = zlib.crc32(line[:-9], checksum)
    text = record if isinstance(record, bytes) else json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    return b"%s %08x\n" % (text, zlib.crc32(text, checksum))


def append_record(path: str | os.PathLike[str], record: Mapping[str, Any] | bytes) -> None:
    """Append ``record`` to the journal at ``path`` with a valid checksum: an
    event a writer never made, which only replaying can refuse."""
    before = Path(path).read_bytes()
    Path(path).write_bytes(before + journal_line(record, before))


@contextmanager
def fast_paths(enabled: bool) -> Iterator[None]:
    """Run the body with the fast paths on or off (the switch is read
    whenever a load or a resolution starts, so the whole body is inside)."""
    before = os.environ.get(FAST_PATHS_OFF)
    if enabled:
        os.environ.pop(FAST_PATHS_OFF, None)
    else:
        os.environ[FAST_PATHS_OFF] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(FAST_PATHS_OFF, None)
        else:
            os.environ[FAST_PATHS_OFF] = before


@pytest.fixture
def fast_paths_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast paths on for the test, whatever the environment says."""
    monkeypatch.delenv(FAST_PATHS_OFF, raising=False)


@pytest.fixture(autouse=True)
def collector_not_left_frozen() -> Iterator[None]:
    """No test leaves the test process's objects frozen for the cyclic
    collector (``gc.freeze``, which ``cdl lsp``'s worker does in its own
    process): the tests after it would keep their garbage until full
    collections that come far less often, and ran several times slower."""
    yield
    assert gc.get_freeze_count() == 0, "gc.freeze() left in force: call gc.unfreeze() once done"
