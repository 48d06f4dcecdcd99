"""The engine as the language server uses it: every name ``cdl lsp`` takes
from the layers below, in one place, and only public ones.

The server's other modules import the engine from here and nowhere else
(``tests/test_architecture.py`` holds them to it), so what the server
depends on is this list:

- loading and resolving a document as the editor holds it (``load_with``
  with ``LoadOptions.overlay``, ``Document``, ``Resolution``, ``loaded_of``
  for the loaded set behind a Document, ``resolution_after`` and
  ``hand_over`` to take over what an edit did not reach of the last
  resolution, ``Earlier``, ``CdlError``; ``check_plan`` for the errors of
  its plan);
- the texts and their positions (``text``: encodings, lines, start tags);
- the loaded trees and what the loader parsed into them (``model``: names,
  elements, paths and their walks, tables, prefixes);
- a resolution that records provenance, for hovers and references
  (``resolve_working``, ``Recorder``, ``explain``, ``ReferenceResolver``);
- the plan, for the code lenses (``Plan``), of that resolution
  (``resolution_of`` its working trees).
"""

from __future__ import annotations

from .. import __version__
from ..engine.document import Document, load_with, loaded_of
from ..engine.phases import Earlier, Loaded, resolve_working
from ..engine.resolution import Resolution, check_plan, hand_over, resolution_after, resolution_of
from ..errors import CdlError
from ..loading.imports import LoadOptions
from ..loading.urls import join_url, local_path
from ..model.children import ChildIndex, children_by_name
from ..model.elements import depth_in_list, doc_index_of, tag_of, top_level_of
from ..model.items import holder_of, is_unresolved
from ..model.naming import Prefixes, Steps
from ..model.paths import PathSyntaxError, PrefixError, parse_name_ref, parse_path, parse_qname, path_start_in, relative_ref, walk
from ..model.scan import released, releasing, releasing_tree
from ..model.tables import NameRef, Ref
from ..model.vocabulary import (
    A_CREF,
    A_EXTENDS,
    A_LAZY,
    A_REFROOT,
    A_USE,
    CDL_ATTRIBUTES,
    CDL_NS,
    ENGINE_NS,
    P_EXPR,
    P_EXT,
    P_REF,
    T_CDL,
    T_EXPRESSION,
    T_IMPORT,
    T_SYSTEM,
    T_VARIABLE,
    engine,
    split_clark,
)
from ..model.workspace import Problems, SourceDoc, Workspace
from ..planning.plan import Plan, PlannedComponent
from ..resolution.explain import Explanation, Recorder, Step, explain, path_namespaces, select
from ..resolution.references import ReferenceResolver, items_in
from ..text.encoding import decode, encode
from ..text.lines import UTF8, UTF16, UTF32, Lines
from ..text.tags import (
    Attr,
    Tag,
    TagIndex,
    forget_text,
    index_tags,
    markup_before,
    read_start_tag,
    scan,
    start_line,
    tags_reaching,
    unescape,
)

__all__ = [
    "A_CREF",
    "A_EXTENDS",
    "A_LAZY",
    "A_REFROOT",
    "A_USE",
    "CDL_ATTRIBUTES",
    "CDL_NS",
    "ENGINE_NS",
    "P_EXPR",
    "P_EXT",
    "P_REF",
    "T_CDL",
    "T_EXPRESSION",
    "T_IMPORT",
    "T_SYSTEM",
    "T_VARIABLE",
    "UTF8",
    "UTF16",
    "UTF32",
    "Attr",
    "CdlError",
    "ChildIndex",
    "Document",
    "Earlier",
    "Explanation",
    "Lines",
    "LoadOptions",
    "Loaded",
    "NameRef",
    "PathSyntaxError",
    "Plan",
    "PlannedComponent",
    "PrefixError",
    "Prefixes",
    "Problems",
    "Recorder",
    "Ref",
    "ReferenceResolver",
    "Resolution",
    "SourceDoc",
    "Step",
    "Steps",
    "Tag",
    "TagIndex",
    "Workspace",
    "__version__",
    "check_plan",
    "children_by_name",
    "decode",
    "depth_in_list",
    "doc_index_of",
    "encode",
    "engine",
    "explain",
    "forget_text",
    "holder_of",
    "hand_over",
    "index_tags",
    "is_unresolved",
    "items_in",
    "join_url",
    "load_with",
    "loaded_of",
    "local_path",
    "markup_before",
    "parse_name_ref",
    "path_namespaces",
    "parse_path",
    "parse_qname",
    "path_start_in",
    "read_start_tag",
    "relative_ref",
    "released",
    "releasing",
    "releasing_tree",
    "resolution_after",
    "resolution_of",
    "resolve_working",
    "scan",
    "select",
    "split_clark",
    "start_line",
    "tag_of",
    "tags_reaching",
    "top_level_of",
    "unescape",
    "walk",
]
