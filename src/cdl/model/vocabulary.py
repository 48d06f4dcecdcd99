"""The names of CDL: its namespaces, elements and attributes, and the engine's
private attributes, as Clark names (``{uri}local``, ``local`` for no
namespace), the form lxml uses for tags, so a resolved name can be compared
with a tag directly.

Imports nothing of the engine: every other module may use it.
"""

from __future__ import annotations

CDL_NS = "http://www.gridforum.org/namespaces/2005/02/cddlm/CDL-1.0"
XSD_NS = "http://www.w3.org/2001/XMLSchema"
#: Private attributes live here; the serializer removes them all.
ENGINE_NS = "urn:x-cdl-engine:internal"


def cdl(local: str) -> str:
    """The Clark name of a name in the CDL namespace."""
    return f"{{{CDL_NS}}}{local}"


def engine(local: str) -> str:
    """The Clark name of one of the engine's private attributes."""
    return f"{{{ENGINE_NS}}}{local}"


# CDL elements and attributes.
T_CDL = cdl("cdl")
T_IMPORT = cdl("import")
T_TYPES = cdl("types")
T_CONFIGURATION = cdl("configuration")
T_SYSTEM = cdl("system")
T_DOCUMENTATION = cdl("documentation")
T_EXPRESSION = cdl("expression")
T_VARIABLE = cdl("variable")
A_EXTENDS = cdl("extends")
A_CREF = cdl("ref")
A_REFROOT = cdl("refroot")
A_LAZY = cdl("lazy")
A_TYPE = cdl("type")
A_USE = cdl("use")
LIST_PARENTS = frozenset((T_CONFIGURATION, T_SYSTEM))
#: The attributes CDL defines (Appendix A); the loader refuses any other in its namespace.
CDL_ATTRIBUTES = frozenset((A_EXTENDS, A_CREF, A_REFROOT, A_LAZY, A_TYPE, A_USE))

# Private attributes (values are indexes into Tables, or a document index).
P_REF = engine("ref")  # the cdl:ref/cdl:refroot pair, as one atomic value
P_EXT = engine("ext")  # the prototype name of cdl:extends
P_EXPR = engine("expr")  # on cdl:expression: its parsed expression
P_DOC = engine("doc")  # which document the element (and its subtree) came from
#: On an element that inherited children from a prototype of another
#: document: "DOC TAG TAG ...", the document of its children of those tags
#: (see copies_mark).
P_COPIES = engine("copies")
P_PROV = engine("prov")  # explain only: index of the element's latest provenance event, then where it is written if marked (_explain)

#: A path step that climbs to the parent; every other step is a Clark name.
UP = ".."


def split_clark(name: str) -> tuple[str, str]:
    """``{uri}local`` -> (uri, local); ``local`` -> ("", local)."""
    if name.startswith("{"):
        uri, _, local = name[1:].partition("}")
        return uri, local
    return "", name


#: The tag of the elements that carry copies into a tree, one C call
#: (``etree.strip_tags``) putting their children in their place: in the
#: engine's namespace, which no document may use.
T_COPIES = engine("copies")
