"""The seam through which tests look inside the engine.

Tests use the public API (``cdl.load``, ``Document``, ``Resolution``) wherever
they can. Some rules are only visible in the engine's working state: which
elements are still items, what the loader wrote into its tables, how a phase
left the working trees. Those tests come through the functions here instead
of reaching into the private attributes of the public classes, so that a
change in how a Document or a Resolution keeps its state changes this file,
not every test.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lxml import etree

import cdl
from cdl.deployment.machine import Machine
from cdl.engine.document import loaded_of
from cdl.engine.phases import resolve_working
from cdl.model.tables import Tables
from cdl.model.workspace import SourceDoc, Workspace
from cdl.resolution.laziness import Round
from cdl.resolution.output import OutputFacts
from cdl.resolution.references import ReferenceResolver


def working_copy(document: cdl.Document) -> Workspace:
    """Fresh working trees of ``document``, as a resolution starts with them
    (no phase has run)."""
    return loaded_of(document).workspace()


def resolved(
    document: cdl.Document, rounds: Sequence[Round] = ()
) -> tuple[Workspace, ReferenceResolver, list[etree._Element]]:
    """Every resolution phase run on fresh working trees: the trees, their
    resolver and the main document's items left unresolved."""
    return resolve_working(loaded_of(document), rounds)


def working_state(resolution: cdl.Resolution) -> tuple[Workspace, ReferenceResolver]:
    """The resolved working trees of ``resolution`` and their resolver
    (resolved again if an output took them)."""
    ws = resolution._working()
    resolver = resolution._resolver
    assert resolver is not None  # set with the trees
    return ws, resolver


def sources(document: cdl.Document) -> list[SourceDoc]:
    """The loaded documents, the main one first (never modified)."""
    return loaded_of(document).docs


def tables(document: cdl.Document) -> Tables:
    """What the loader parsed: references, names, expressions, item names."""
    return loaded_of(document).tables


def output_facts(document: cdl.Document) -> OutputFacts | None:
    """What the loader found for the output's known path (None: loaded
    without fast paths)."""
    return loaded_of(document).output_facts


def required_tags(document: cdl.Document) -> frozenset[str] | None:
    """The tags the required check looks at (None: every element)."""
    return loaded_of(document).required_tags


@contextmanager
def counted_attempts() -> Iterator[list[int]]:
    """Count the items handed to the resolver to resolve (again) while the
    body runs (one int, in the list it yields): what the events of a
    deployment cost, untimed."""
    count = [0]
    real = ReferenceResolver.run

    def run(self: ReferenceResolver, items: Iterable[etree._Element], **options: Any) -> None:
        listed = list(items)
        count[0] += len(listed)
        real(self, listed, **options)

    ReferenceResolver.run = run  # type: ignore[method-assign]
    try:
        yield count
    finally:
        ReferenceResolver.run = real  # type: ignore[method-assign]


def machine_of(deployment: cdl.Deployment) -> Machine:
    """The states of a deployment's components, by number (``deployment.machine``)."""
    return deployment._state.machine


@contextmanager
def counted_calls(owner: Any, name: str) -> Iterator[list[int]]:
    """Count the calls of ``owner.name`` (a function or method) while the body
    runs (one int, in the list it yields): work counted, untimed."""
    count = [0]
    real = getattr(owner, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return real(*args, **kwargs)

    setattr(owner, name, counting)
    try:
        yield count
    finally:
        setattr(owner, name, real)
