"""Errors raised by the CDL engine.

Every failure the engine reports is a :class:`CdlError`. Each carries a stable
``code`` (a short upper-case word that tests, the conformance suite and callers
can match on), the URL of the document it concerns, the line there, and the
property path (``/List/child/grandchild``) where that makes sense.

The subclasses group the codes by phase, so a caller can catch, say, every
reference problem with ``except ReferenceResolutionError``. When one run finds
several independent problems they are raised together as a
:class:`CdlErrorGroup`, itself a :class:`CdlError` (its code is the first
error's), so ``except CdlError`` is always enough.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = [
    "CdlError",
    "CdlErrorGroup",
    "LoadError",
    "ImportRefusedError",
    "NameResolutionError",
    "InheritanceError",
    "ReferenceResolutionError",
    "ExpressionError",
    "LazinessError",
    "RequiredPropertyError",
    "DeployValueError",
    "LimitError",
    "ValidationError",
    "PlanError",
    "DeploymentError",
    "SelectionError",
    "JournalError",
    "CODES",
]

#: Every code the engine uses, with what it means. The conformance suite and
#: the documentation refer to these names; never rename one.
CODES: dict[str, str] = {
    # reading documents
    "IO_ERROR": "a document could not be read",
    "XML_SYNTAX": "a document is not well-formed XML",
    "XML_DTD": "a document has a DTD or entity declarations, which are refused",
    "NOT_CDL": "the root element is not cdl:cdl in the CDL namespace",
    "STRUCTURE": "CDL elements are misplaced, repeated, unknown or lack a required attribute",
    # imports
    "IMPORT_NOT_FOUND": "an imported document could not be read",
    "IMPORT_REFUSED": "an import location is not allowed (remote, outside the allowed directories, or an unsupported scheme)",
    "IMPORT_SYSTEM": "an imported document has a cdl:system element",
    "CATALOG_INVALID": "an XML catalog (--catalog) cannot be read, is malformed, or uses an unsupported entry",
    # names and prototypes
    "BAD_QNAME": "a QName is malformed or uses an undeclared prefix",
    "DUPLICATE_NAME": "two top level lists have the same name",
    "UNKNOWN_PROTOTYPE": "cdl:extends names no top level list",
    "EXTENDS_CYCLE": "prototype references form a cycle",
    # value references
    "BAD_PATH": "a cdl:ref path does not follow the grammar of 7.3.1",
    "REF_WITH_CHILDREN": "a value reference is placed on an element that has child elements",
    "REFROOT_WITHOUT_REF": "cdl:refroot is given without cdl:ref",
    "REF_CONTEXT": "a reference on a top level list has no cdl:refroot, so it has no context",
    "UNKNOWN_REFROOT": "cdl:refroot names no top level list",
    "REF_NOT_FOUND": "a reference path selects no property",
    "REF_ABOVE_TOP": "a reference path climbs above its top level list",
    "REF_CYCLE": "value references or expressions depend on each other in a cycle",
    # expressions
    "BAD_EXPRESSION": "a cdl:expression is malformed or its value-of is not XPath 1.0",
    "EXPR_LOCATION_PATH": "a cdl:expression uses a location path, the context node, or a function that needs a node-set",
    "EXPR_UNDECLARED_VARIABLE": "a cdl:expression uses a variable no cdl:variable declares",
    "EXPR_EVALUATION": "a cdl:expression failed when evaluated (XPath 1.0 over strings, numbers and booleans cannot; kept for safety)",
    "VARIABLE_MULTIPLE": "a cdl:variable path selects more than one property",
    # laziness, requirements, deploy-time values
    "BAD_LAZY": "cdl:lazy is not an xsd:boolean",
    "LAZY_WITH_VALUE": "cdl:lazy is placed on a property that has a value and no reference",
    "BAD_USE": "cdl:use is neither 'required' nor 'optional'",
    "REQUIRED_MISSING": "a required property of the system has no value",
    "BAD_SET": "a deploy-time value is not written as LIST/PATH=VALUE",
    "SET_NOT_FOUND": "a deploy-time value names no property",
    "SET_NOT_LAZY": "a deploy-time value names a property that is not lazy",
    "LAZY_UNRESOLVED": "a released lazy reference still cannot be resolved",
    "TEMPLATE_UNRESOLVED": "a template leaves a reference or an expression unresolved, for the lists extending it to "
    "provide (7.6): a warning (Resolution.warnings), the code of its diagnostic in cdl lsp, never an error",
    # deployment plan
    "PLAN_CYCLE": "sibling components wait for each other's deploy-time values in a cycle, so none can be deployed first",
    "PLAN_ANCESTOR_WAIT": "a component waits for a deploy-time value of its own ancestor, which is deployed only after it",
    # deployment sessions (Document.deploy)
    "COMPONENT_NOT_FOUND": "a deployment event, or cdl diff --select, names no component of the plan",
    "NOT_READY": "a deployment event names a component that is not ready (it waits, is deployed, failed or blocked;"
    " or, to be removed, others that wait on it are still there)",
    "NOT_FAILED": "retry names a component that has not failed",
    "NOT_REMOVING": "removed names a component that is not being removed (no teardown, and no update removed it)",
    "TORN_DOWN": "an update or values are given to a deployment being taken down (teardown): it deploys nothing more",
    "SET_CONFLICT": "a deploy-time value differs from the one already supplied for that lazy property, or one round names a property twice",
    "VALUES_MISSING": "a component is reported deployed without a lazy value it supplies or releases, and without saying it comes later",
    "NOT_OWNER": "a component's deployment reports a lazy value of another component (or of a template): give it with supply",
    "DEPLOYMENT_CLOSED": "an event is given to a deployment whose journal was closed",
    "DEPLOYMENT_READ_ONLY": "an event is given to a deployment opened read-only (read_only=True; cdl deploy status, ready, config)",
    "DEPLOYMENT_BROKEN": "the deployment's state is half made (a rebuild that failed, a fork during another thread's call); open it again",
    "BAD_TEXT": "a deployment event holds a string that is not text (a lone surrogate: bytes that are not UTF-8, from the shell)",
    # limits and validation
    "LIMIT_EXCEEDED": "a configured limit was exceeded",
    "SCHEMA_INVALID": "a document does not conform to the CDL schema",
    "TYPE_INVALID": "a property value does not conform to its cdl:type",
    # selecting resolved properties (explain, resolve --select)
    "BAD_SELECT": "a path given to explain or --select is not written as LIST/child/...",
    "SELECT_NOT_FOUND": "a path given to explain or --select selects no property",
    # deployment journals (Document.deploy(journal=...), cdl deploy --journal)
    "JOURNAL_MISMATCH": "a deployment journal was begun (or last updated) with other documents or catalogs than those loaded"
    " now: open it with those, or move it to these with update",
    "JOURNAL_CORRUPT": "a line of a deployment journal is malformed or was changed (its checksum differs), but a last line cut short",
    "JOURNAL_LOCKED": "a deployment journal is in use by another process or another open deployment (still, after --wait seconds)",
    "NOT_JOURNAL": "the file given as a deployment journal is not one (its first line is no journal header); it is left as it was",
    "JOURNAL_FORKED": "a forked process gives an event to a deployment whose journal its parent opened; open it again in the child",
}


class CdlError(Exception):
    """Base class of every error the engine reports.

    Attributes:
        code: stable identifier from :data:`CODES`.
        message: what is wrong, in one sentence.
        url: the document concerned (a path or URL), or None.
        line: the line in that document, or None.
        path: the property path (``/List/child``), or None.

    ``at``, a (url, line, path) triple, gives the location in one argument;
    ``url``, ``line`` and ``path`` given as well take precedence.
    """

    default_code = "STRUCTURE"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        url: str | None = None,
        line: int | None = None,
        path: str | None = None,
        at: tuple[str | None, int | None, str | None] | None = None,
    ) -> None:
        self.code = code or self.default_code
        if self.code not in CODES:  # a programming error, not a user one
            raise ValueError(f"unknown error code {self.code!r}")
        self.message = message
        self.url = url
        self.line = line
        self.path = path
        if at is not None:
            self.locate(at)
        super().__init__(message)

    def locate(self, at: tuple[str | None, int | None, str | None]) -> None:
        """Take the place ``at``, a (url, line, path) triple, where this error
        does not say otherwise."""
        url, line, path = at
        self.url = self.url if self.url is not None else url
        self.line = self.line if self.line is not None else line
        self.path = self.path if self.path is not None else path

    def __str__(self) -> str:
        # Rendered when asked: a phase may add the location after creation.
        return self.render()

    @property
    def errors(self) -> Sequence[CdlError]:
        """The individual errors: this one alone, or a group's members."""
        return (self,)

    def render(self) -> str:
        """``file:line: [CODE] message (at path)``, leaving out what is unknown."""
        where = self.url or "<input>"
        if self.line:
            where = f"{where}:{self.line}"
        text = f"{where}: [{self.code}] {self.message}"
        if self.path:
            text += f" (at {self.path})"
        return text


class CdlErrorGroup(CdlError):
    """Several independent errors found in one run, reported together."""

    def __init__(self, errors: Iterable[CdlError]) -> None:
        self._errors: tuple[CdlError, ...] = tuple(e for err in errors for e in err.errors)
        if not self._errors:
            raise ValueError("an error group needs at least one error")
        first = self._errors[0]
        super().__init__(first.message, code=first.code, url=first.url, line=first.line, path=first.path)

    @property
    def errors(self) -> Sequence[CdlError]:
        return self._errors

    def render(self) -> str:
        return "\n".join(e.render() for e in self._errors)


class LoadError(CdlError):
    """A document could not be read, parsed, or has the wrong structure."""


class ImportRefusedError(LoadError):
    """An import could not be loaded or is not allowed."""

    default_code = "IMPORT_REFUSED"


class NameResolutionError(CdlError):
    """A QName could not be resolved, or a top level name is defined twice."""

    default_code = "BAD_QNAME"


class InheritanceError(CdlError):
    """A prototype reference (cdl:extends) could not be resolved."""

    default_code = "UNKNOWN_PROTOTYPE"


class ReferenceResolutionError(CdlError):
    """A value reference (cdl:ref) could not be resolved."""

    default_code = "REF_NOT_FOUND"


class ExpressionError(CdlError):
    """A cdl:expression is malformed or could not be evaluated."""

    default_code = "BAD_EXPRESSION"


class LazinessError(CdlError):
    """A cdl:lazy annotation is malformed or misplaced."""

    default_code = "BAD_LAZY"


class RequiredPropertyError(CdlError):
    """A property marked cdl:use="required" has no value."""

    default_code = "REQUIRED_MISSING"


class DeployValueError(CdlError):
    """A deploy-time value could not be applied."""

    default_code = "SET_NOT_FOUND"


class LimitError(CdlError):
    """A configured limit (size, depth, element count, ...) was exceeded."""

    default_code = "LIMIT_EXCEEDED"


class ValidationError(CdlError):
    """A document or value does not conform to its schema or type."""

    default_code = "TYPE_INVALID"


class PlanError(CdlError):
    """The components cannot be put in a deployment order (a cycle, or a wait for an ancestor)."""

    default_code = "PLAN_CYCLE"


class DeploymentError(CdlError):
    """A deployment event that the state of the deployment refuses (``Document.deploy``)."""

    default_code = "NOT_READY"


class SelectionError(CdlError):
    """A path given to ``explain`` or ``--select`` selects no property."""

    default_code = "SELECT_NOT_FOUND"


class JournalError(CdlError):
    """A deployment journal cannot be used: begun with other documents, malformed, or in use."""

    default_code = "JOURNAL_CORRUPT"
