"""cdl: the reference engine for the CDDLM Configuration Description Language (CDL 1.0).

Load a document with its imports, resolve it, supply deploy-time values for
lazy properties, read what is still pending, and serialize::

    import cdl

    doc = cdl.load("samples/webapp/system.cdl")
    result = doc.resolve()
    for item in result.pending:
        print(item.path, item.kind)
    deployed = result.supply({"WebApplication/t:DB/t:hostname": "db.example.org"})
    print(deployed.to_bytes().decode())
    for why in deployed.explain("WebApplication/t:Web/t:dbconnection/t:hostname"):
        print(why.to_data())                   # where the value came from, step by step

Every failure raises :class:`cdl.CdlError` (see :mod:`cdl.errors`).

The package is built in layers, each a subpackage that imports only the
layers before it (``tests/test_architecture.py`` holds it to that):

1. ``errors``: :class:`CdlError` and the codes;
2. ``text``: where things are written in a document's text;
3. ``model``: the data model every phase shares;
4. ``loading``: files, URLs, catalogs, imports and parsing (phases 1-3);
5. ``resolution``: prototypes, references, laziness, output, provenance (phases 4-6);
6. ``planning``: the deployment plan and its pictures;
7. ``deployment``: a deployment session's states, names, status and journal;
8. ``engine``: the one composition of the phases, and the public classes;
9. this module, ``validate`` and ``conformance``: the public API and the suite;
10. ``lsp`` (the language server), ``cli`` (the ``cdl`` command) and ``__main__``.
"""

from .deployment.status import ComponentStatus, DeploymentStatus
from .engine.deployment import Deployment
from .engine.document import Document, load
from .engine.resolution import Resolution
from .errors import CdlError, CdlErrorGroup
from .model.limits import Limits
from .model.vocabulary import CDL_NS
from .planning.changes import Written
from .planning.diff import Cause, ComponentChange, Diff, ValueChange
from .planning.plan import Plan, PlannedComponent
from .resolution.explain import Explanation, Step
from .resolution.laziness import Pending, Round

__all__ = [
    "CDL_NS",
    "Cause",
    "CdlError",
    "CdlErrorGroup",
    "ComponentChange",
    "ComponentStatus",
    "Deployment",
    "DeploymentStatus",
    "Diff",
    "Document",
    "Explanation",
    "Limits",
    "Pending",
    "Plan",
    "PlannedComponent",
    "Resolution",
    "Round",
    "Step",
    "ValueChange",
    "Written",
    "load",
]

__version__ = "0.1.0"
