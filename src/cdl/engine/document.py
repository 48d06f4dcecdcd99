"""The public entry of the engine: :func:`load` makes a :class:`Document`
(``cdl.load``, ``cdl.Document``), which resolves (``Resolution``, this
package's ``resolution``) and deploys (``Deployment``, ``deployment``).
The phases themselves are composed once, in ``phases``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from lxml import etree

from ..errors import DeployValueError
from ..loading.imports import LoadOptions
from ..loading.schema import schemas_of
from ..model.limits import Limits
from ..model.naming import counted
from ..planning.diff import Diff
from ..resolution.laziness import Round, RoundLike
from .deployment import Deployment, deployment_of
from .diff import diff_loaded
from .phases import Loaded, load_loaded
from .resolution import Resolution, resolution_of


class Document:
    """A loaded CDL document with everything it imports. Never modified.

    Made by :func:`cdl.load` (the constructor refuses). Each :meth:`resolve`
    works on fresh copies, so one Document can be resolved many times with
    different deploy-time values.
    """

    __slots__ = ("_loaded",)
    _loaded: Loaded

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("cdl.Document is not made by callers: cdl.load() gives one")

    @property
    def url(self) -> str:
        """The main document's path or URL, as given."""
        return self._loaded.url

    @property
    def urls(self) -> tuple[str, ...]:
        """Every loaded document, the main one first, then imports in load order."""
        return tuple(d.url for d in self._loaded.docs)

    def __repr__(self) -> str:
        n = len(self._loaded.docs)
        return f"<cdl.Document {self.url!r} ({counted(n, 'document')})>"

    def reads(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` is one of the files this document was loaded from."""
        try:
            real = os.path.realpath(path)
        except (OSError, ValueError):
            return False
        return any(d.file is not None and d.file == real for d in self._loaded.docs)

    @property
    def schemas(self) -> list[etree._Element]:
        """The xsd:schema elements found in the documents' cdl:types."""
        return schemas_of(self._loaded.docs)

    def resolve(
        self,
        values: Mapping[str, str] | None = None,
        *,
        release: Sequence[str] = (),
        rounds: Iterable[RoundLike] = (),
        validate: bool = False,
    ) -> Resolution:
        """Resolve the documents; optionally supply deploy-time values.

        ``values`` (``{"LIST/child": "value"}``) and ``release`` (paths of lazy
        references to release) form one round applied after static
        resolution; ``rounds`` gives several, applied in order. Paths use the
        main document's prefixes. With ``validate``, every resolved value with
        a ``cdl:type`` is checked against its type (warnings for types that
        cannot be found are in ``Resolution.warnings``). Raises
        :class:`cdl.CdlError`.
        """
        steps = [_round(r) for r in rounds]
        if values or release:
            steps.append(Round(dict(values or {}), tuple(release)))
        return resolution_of(self._loaded, steps, validate)

    def diff(self, other: Document, *, rounds: Iterable[RoundLike] = (), select: str | None = None) -> Diff:
        """What differs between this version's system and ``other``'s (the new
        version), and why: a :class:`cdl.Diff`.

        Both are resolved with the same deploy-time ``rounds`` (as
        :meth:`resolve` takes them). Each component that was added, removed
        or whose own configuration changed is listed with the values that
        differ, each with its causes: the elements written differently in
        the two versions that made the difference, where each version
        writes them. ``select`` (a component's path, as ``cdl plan`` writes
        it): only that component. Raises :class:`cdl.CdlError` when either
        version does not resolve, or ``select`` names no component of either
        (``COMPONENT_NOT_FOUND``).
        """
        return diff_loaded(self._loaded, other._loaded, [_round(r) for r in rounds], select)

    def deploy(self, journal: str | os.PathLike[str] | None = None, *, read_only: bool = False, wait: float = 0.0) -> Deployment:
        """Start (or, with an existing ``journal``, resume) a deployment of the
        system: a live :class:`cdl.Deployment` of its plan's components.

        With ``journal`` (a file path), every event is appended to it and
        made durable before the call returns, and opening it again resumes.
        ``read_only``: only read the journal (a shared lock, let go once it is
        read; nothing created or written; events are refused). ``wait``: how
        many seconds to wait for another deployment to let the journal go
        (JOURNAL_LOCKED after that).
        Raises :class:`cdl.CdlError` as :meth:`resolve` and :meth:`Resolution.plan` do.
        """
        return deployment_of(self._loaded, journal, read_only=read_only, wait=wait, loaded_of=loaded_of)


def _round(value: RoundLike) -> Round:
    if isinstance(value, Round):
        return value
    unknown = set(value) - {"set", "release"}
    if unknown:
        raise DeployValueError(f"a round has unknown keys {sorted(unknown)}; use 'set' and 'release'", code="BAD_SET")
    return Round(dict(value.get("set") or {}), tuple(value.get("release") or ()))


def load(
    source: str | os.PathLike[str] | bytes,
    *,
    allow_remote: bool = False,
    import_paths: Sequence[str | os.PathLike[str]] = (),
    resolver: Callable[[str], bytes] | None = None,
    limits: Limits | None = None,
    name: str | None = None,
    catalogs: Sequence[str | os.PathLike[str]] = (),
    base: str | os.PathLike[str] | None = None,
) -> Document:
    """Load a CDL document and its imports.

    ``source`` is a file path, a URL (``file:``; ``http(s):`` only with
    ``allow_remote``; other schemes through ``resolver``), or the document's
    bytes (``name`` then labels it in messages; its relative imports resolve
    against ``base``, a directory as a path or ``file:`` URL, the current
    directory by default). Imported files must lie under the main document's
    directory (``base`` for bytes) or one of ``import_paths``. ``resolver``
    (``url -> bytes``) replaces how non-file URLs are read. ``catalogs`` are
    OASIS XML catalog files mapping import locations (``http://...``,
    ``classpath:/...``) to local files, which are then read as files (their
    directories are allowed too). Raises :class:`cdl.CdlError`.
    """
    options = LoadOptions(
        allow_remote=allow_remote,
        import_paths=tuple(os.fspath(p) for p in import_paths),
        resolver=resolver,
        limits=limits or Limits(),
        catalogs=tuple(os.fspath(c) for c in catalogs),
    )
    return load_with(source, options, name, base)


def load_with(
    source: str | os.PathLike[str] | bytes,
    options: LoadOptions,
    name: str | None = None,
    base: str | os.PathLike[str] | None = None,
    continuing: Loaded | None = None,
    output: bool = True,
) -> Document:
    """:func:`load` with the options built (``cdl lsp`` adds its open buffers);
    ``continuing``: the load of the version before; ``output``: whether the
    output's known path is prepared (``phases.load_loaded``)."""
    return document_of(load_loaded(source, options, name, base, continuing, output))


def document_of(loaded: Loaded) -> Document:
    """The :class:`Document` of a loaded document set (what :func:`load` returns)."""
    document = object.__new__(Document)
    document._loaded = loaded
    return document


def loaded_of(document: object) -> Loaded:
    """The document set a :class:`Document` holds, for the layers that read
    it beyond the public API (the language server, a deployment's update);
    TypeError for anything else."""
    if not isinstance(document, Document):
        raise TypeError(f"a cdl.Document (cdl.load) is needed, not {type(document).__name__}")
    return document._loaded
