"""The JSON writer and element mapping (``resolution.output.data_json``,
``element_data``): the text is what the ``json`` module writes, without its
recursion (tests/test_json_mapping.py has the mapping through ``to_data`` and
``--format json``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import cdl
from cdl.resolution.output import data_json, element_data
from conftest import resolve_text
from test_json_mapping import PENDING_REFROOT, SAMPLES


@pytest.mark.parametrize(
    "data",
    [
        {},
        [],
        "",
        {"a": {}, "b": [], "c": [{}, [], ""]},
        {"é\u2028": ["\"\\\n\t\x00", {"@k": "ü 😀"}], "#text": " "},
        [[["x"]], {"y": [{"z": "1"}, "2"]}],
    ],
)
def test_json_text_is_what_the_json_module_writes(data: Any) -> None:
    assert data_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda p: p.parent.name)
def test_samples_json_text_is_what_the_json_module_writes(sample: Path) -> None:
    data = cdl.load(str(sample)).resolve().to_data()
    assert data_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_one_element_as_data() -> None:
    tree = resolve_text(PENDING_REFROOT).tree()
    [r] = tree.iter("r")
    assert element_data(r) == {"@cdl:refroot": "t:T", "@cdl:ref": "./t:v"}
