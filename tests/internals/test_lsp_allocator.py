"""What ``cdl lsp`` sets in its process so that a request does not wait for
the analysis worker: glibc's fast bins off (``lsp.server.fast_bins_off``: the
freed nodes of an analysis are never merged all at once inside a later
allocation, which holds the interpreter), and a short switch interval
(``lsp.server.SWITCH_INTERVAL``: lxml's copies let go of the interpreter for
a moment, which kept restarting a waiting thread's wait)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import cdl.lsp.server as server_module


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError, AttributeError):
        return False


#: Frees many small libxml2 nodes, then prints the bytes glibc holds in fast
#: bins (mallinfo2's fsmblks), after turning them off if asked.
_PROBE = """
import ctypes, sys
from lxml import etree
if sys.argv[1] == "off":
    from cdl.lsp.server import fast_bins_off
    assert fast_bins_off()
for _ in range(20):
    root = etree.fromstring(b"<r>" + b"<a x='1'>t</a>" * 20000 + b"</r>")
    del root
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
print(libc.mallinfo2().fsmblks)
"""


def _fast_bin_bytes(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], check=True, capture_output=True, text=True).stdout
    return int(out)


@pytest.mark.skipif(not _glibc(), reason="glibc's allocator only")
def test_fast_bins_are_off_once_turned_off() -> None:
    assert _fast_bin_bytes("on") > 0  # what the probe measures is there to see
    assert _fast_bin_bytes("off") == 0


def test_serve_sets_both_before_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    class _Server:
        def start_io(self) -> None:
            calls.append("served")

    monkeypatch.setattr(server_module, "fast_bins_off", lambda: calls.append("off") or True)
    monkeypatch.setattr(server_module, "build_server", _Server)
    interval = sys.getswitchinterval()
    try:
        server_module.serve()
        assert sys.getswitchinterval() == pytest.approx(server_module.SWITCH_INTERVAL) != pytest.approx(interval)
    finally:
        sys.setswitchinterval(interval)
    assert calls == ["off", "served"]
