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
"""

from ._deploy import ComponentStatus, Deployment, DeploymentStatus
from ._engine import Document, Resolution, load
from ._explain import Explanation, Step
from ._laziness import Pending, Round
from ._limits import Limits
from ._model import CDL_NS
from ._plan import Plan, PlannedComponent
from .errors import CdlError, CdlErrorGroup

__all__ = [
    "CDL_NS",
    "CdlError",
    "CdlErrorGroup",
    "ComponentStatus",
    "Deployment",
    "DeploymentStatus",
    "Document",
    "Explanation",
    "Limits",
    "Pending",
    "Plan",
    "PlannedComponent",
    "Resolution",
    "Round",
    "Step",
    "load",
]

__version__ = "0.1.0"
