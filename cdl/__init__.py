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

Every failure raises :class:`cdl.CdlError` (see :mod:`cdl.errors`).
"""

from ._engine import Document, Resolution, load
from ._laziness import Pending, Round
from ._limits import Limits
from ._model import CDL_NS
from .errors import CdlError, CdlErrorGroup

__all__ = [
    "CDL_NS",
    "CdlError",
    "CdlErrorGroup",
    "Document",
    "Limits",
    "Pending",
    "Resolution",
    "Round",
    "load",
]

__version__ = "0.1.0"
