"""Tests of the engine's internals.

The tests in ``tests/`` use what users use: the ``cdl`` package's public
API (``cdl``, ``cdl.errors``, ``cdl.validate``, ``cdl.conformance``), the
``cdl`` command (``cdl.cli``) and the language server over LSP. The tests
here look inside: a rule's own module (a parser, a scanner, an index, the
journal's file format), the engine's working state (through ``inside``, the
one seam into a Document's and a Resolution's state), or a fault injected at
an internal seam. A test belongs here only when no public API shows what it
checks; ``tests/test_architecture.py`` holds the tests in ``tests/`` to that.
"""
