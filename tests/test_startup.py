"""Start-up: a run imports only what it needs (issue 13), since every run of the
command line pays for each import. elementpath is needed only for documents
with expressions, urllib.request only for remote documents, tempfile only for
writing a file, decimal only for formatting a fractional number."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "webapp" / "system.cdl"
HEAVY = ("elementpath", "urllib.request", "tempfile", "decimal")


def _heavy_loaded(code: str) -> set[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def _loaded_after(code: str) -> list[str]:
    """The heavy modules ``code`` imports, beyond those the interpreter's own
    start-up already loads (a site .pth file may import tempfile, for one)."""
    return sorted(_heavy_loaded(code) - _heavy_loaded("pass"))


def test_resolving_the_sample_imports_nothing_it_does_not_use() -> None:
    assert "cdl:expression" not in SAMPLE.read_text()
    code = f"import cdl.cli, cdl\ncdl.load({str(SAMPLE)!r}).resolve().to_bytes()"
    assert _loaded_after(code) == []


def test_an_expression_imports_elementpath_when_loaded() -> None:
    doc = (
        '<cdl:cdl xmlns:cdl="http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"><cdl:system>'
        "<S><a>2.5</a><e><cdl:expression value-of='$a * 2'><cdl:variable name='a' ref='/a'/></cdl:expression></e></S>"
        "</cdl:system></cdl:cdl>"
    )
    code = f"import cdl\nprint(cdl.load({doc.encode()!r}).resolve().to_bytes().decode(), file=sys.stderr)"
    loaded = _loaded_after(code)
    assert "elementpath" in loaded  # (which itself imports the others)
