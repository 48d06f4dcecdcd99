"""The CDL schema is read at run time from the installed package
(``loading.schema``); tests/test_validate.py has ``cdl.validate``."""

from __future__ import annotations

from lxml import etree

from cdl.loading import schema as validate
from test_validate import CDL_NS


def test_schema_is_found_at_run_time() -> None:
    data, where = validate._schema_source()
    assert where.endswith("cdl.xsd")
    assert etree.fromstring(data).get("targetNamespace") == CDL_NS
