"""Markdown links to a line of a document, for the hovers of ``cdl lsp``
(issue 25, point 3). Entry point: :func:`file_link`."""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path


def file_uri(url: str) -> str:
    """The URI of a document named as :attr:`cdl.Document.urls` names it (a
    path for a file; other URLs stay as they are)."""
    if len(urllib.parse.urlsplit(url).scheme) > 1:  # a one-letter scheme is a Windows drive
        return url
    return Path(os.path.abspath(url)).as_uri()


def file_link(url: str, line: int) -> str:
    """``[url:line](uri#Lline)``: a link editors open at that line (1-based)."""
    label = f"{url}:{line}".replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({file_uri(url)}#L{line})"
