"""Text positions: where things are written in a document's text.

Holds the reading of raw text that no parser records: where a start tag
begins and where each of its attributes is (``tags``), for error lines,
explanations and the language server's ranges.

May import: the standard library and lxml (to read an element's recorded
line and names). Nothing else of cdl: every other layer may use it.
"""
