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

Plan the deployment, and carry it out as the components come up::

    plan = result.plan()                       # the components in waves (cdl plan)
    print(plan.to_text(), end="")              # also to_data(), to_json(), to_dot(), to_mermaid()
    with doc.deploy(journal="webapp.journal") as deployment:   # replays the journal if it exists
        for path in deployment.ready():        # what may be deployed now
            status = deployment.status(path).components[0]
            config = deployment.configuration(path)            # what to deploy it with
            became_ready = deployment.deployed(path, dict.fromkeys(status.supplies, "db.example.org"))

Every failure raises :class:`cdl.CdlError` (see :mod:`cdl.errors`).

For annotations: :data:`Data` is one value of ``to_data()`` (a string, a dict
or a list of values; ``to_data()`` itself is typed ``dict[str, Any]`` so that
a script can index down without narrowing), :data:`RoundLike` one round of
``Document.resolve(rounds=...)``, :data:`ComponentState` a component's state.

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

from .deployment.status import ComponentState, ComponentStatus, DeploymentStatus
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
from .resolution.laziness import Pending, Round, RoundLike
from .resolution.output import Data

__all__ = [
    "CDL_NS",
    "Cause",
    "CdlError",
    "CdlErrorGroup",
    "ComponentChange",
    "ComponentState",
    "ComponentStatus",
    "Data",
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
    "RoundLike",
    "Step",
    "ValueChange",
    "Written",
    "load",
]

__version__ = "0.1.0"
