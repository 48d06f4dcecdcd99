"""A document's bytes and its text: the encoding it is written in.

Entry points: :func:`decode` (bytes -> text, as the XML parser reads them),
:func:`encode` (text -> the bytes a file holding it would have),
:func:`encoding_of` and :func:`has_utf16_bom`. XML 1.0 section 4.3.3 and
Appendix F: a byte order mark says the encoding; without one, the
``encoding`` of the XML declaration at the very start; without one, UTF-8.
The declaration is read here and nowhere else (:data:`_DECLARATION`), for
bytes and for text alike.
"""

from __future__ import annotations

import codecs
import re

#: The byte order marks of UTF-16 (little-endian, big-endian).
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
UTF8_BOM = b"\xef\xbb\xbf"

#: The XML declaration's encoding name (an EncName of XML 1.0, production 81).
_DECLARATION = re.compile(r"""\A<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']""")


def has_utf16_bom(data: bytes) -> bool:
    """Whether ``data`` starts with a UTF-16 byte order mark (then no ASCII
    character is one byte of it)."""
    return data.startswith(UTF16_BOMS)


def declared_encoding(head: str) -> str | None:
    """The encoding the XML declaration at the start of ``head`` names, by
    Python's name for it; None when there is none or Python does not know it."""
    found = _DECLARATION.match(head[1:] if head.startswith("\ufeff") else head)
    if found is None:
        return None
    try:
        return codecs.lookup(found.group(1)).name
    except LookupError:
        return None


def encoding_of(data: bytes) -> str:
    """The encoding ``data`` is read in: its byte order mark's, else its
    declaration's (read as ASCII: a declaration is ASCII in every encoding
    a document without a mark may use), else UTF-8."""
    if has_utf16_bom(data):
        return "utf-16"
    if data.startswith(UTF8_BOM):
        return "utf-8"  # the mark wins over a declaration, as it does for libxml2
    end = data.find(b">")
    return declared_encoding(data[: end + 1 if end >= 0 else len(data)].decode("latin-1")) or "utf-8"


def decode(data: bytes) -> str:
    """A document's bytes as text (a byte order mark left out; what cannot
    be decoded replaced, one character each)."""
    text = data.decode(encoding_of(data), "replace")
    return text[1:] if text.startswith("\ufeff") else text


def encode(text: str) -> bytes:
    """The bytes a file holding ``text`` would have: in the encoding its XML
    declaration names (a character it cannot hold as a character reference,
    which the parser reads back as that character), UTF-8 when it names none
    or one unknown."""
    name = declared_encoding(text)
    if name is not None:
        try:
            return text.encode(name, "xmlcharrefreplace")
        except UnicodeError:
            pass
    return text.encode("utf-8", "surrogatepass")
