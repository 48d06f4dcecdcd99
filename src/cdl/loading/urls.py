"""URLs of documents: which local path a ``file:`` URL names, and how a
relative location resolves against the URL of the document that writes it.

Entry points: :func:`local_path`, :func:`url2pathname` and :func:`join_url`,
used by imports, catalogs and the language server.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse


def local_path(parsed: urllib.parse.SplitResult) -> str | None:
    """The path a ``file:`` URL on this machine names (no host, or
    ``localhost``); None for another scheme or another host."""
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return url2pathname(parsed.path)


def url2pathname(path: str) -> str:
    """``urllib.request.url2pathname``, which is exactly this, without importing
    urllib.request for every file (it pulls in http.client and email); only
    remote documents need that module."""
    if os.name == "nt":
        from nturl2path import url2pathname

        return url2pathname(path)
    return urllib.parse.unquote(path)


def join_url(base: str, location: str) -> str:
    """``location`` resolved against ``base`` (RFC 3986), for any scheme.

    urllib's urljoin leaves a relative reference unresolved for schemes it
    does not know (``repo:`` of a caller's resolver, say).
    """
    if urllib.parse.urlsplit(location).scheme:
        return location
    b = urllib.parse.urlsplit(base)
    if b.scheme in urllib.parse.uses_relative:
        return urllib.parse.urljoin(base, location)
    ref = urllib.parse.urlsplit(location)
    if ref.netloc or location.startswith("//"):
        return urllib.parse.urlunsplit((b.scheme, ref.netloc, ref.path, ref.query, ref.fragment))
    path = ref.path if ref.path.startswith("/") else posixpath.join(posixpath.dirname(b.path), ref.path)
    normalized = posixpath.normpath(path) if path else b.path
    if path.endswith("/") and not normalized.endswith("/"):
        normalized += "/"
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return urllib.parse.urlunsplit((b.scheme, b.netloc, normalized, ref.query, ref.fragment))

