"""Text positions: where things are written in a document's text.

Holds the reading of raw text that no parser records: the encoding a
document's bytes are written in (``encoding``: byte order marks, the XML
declaration), its lines as the parser and as an editor count them, with
columns in code points or an editor's code units (``lines``, kept through
an editor's changes in chunks, ``offsets``), and its start tags with their
attributes, tolerant of text being typed (``tags``), for error lines,
explanations and the language server's ranges.

May import: the standard library and lxml (to read an element's recorded
line and names). Nothing else of cdl: every other layer may use it.
"""
