"""Wide lists (7.3.1): path steps find a child by name among many siblings,
and deploy-time values address children of a wide list (the index behind
them is tested in tests/internals/test_children.py)."""

from __future__ import annotations

from conftest import list_xml, load_text, resolve_text, system


def test_siblings_found_by_name_in_a_wide_list() -> None:
    members = "".join(f"<c{i}><port>{8000 + i}</port><peer cdl:ref='../c{(i * 7 + 3) % 40}/port'/></c{i}>" for i in range(40))
    res = resolve_text(system(f"<Cluster>{members}</Cluster>"))
    out = list_xml(res, "Cluster")
    for i in range(40):
        assert f"<c{i}><port>{8000 + i}</port><peer>{8000 + (i * 7 + 3) % 40}</peer></c{i}>" in out


def test_deploy_values_address_children_of_a_wide_list() -> None:
    members = "".join(f"<c{i}><pid cdl:lazy='true'/></c{i}>" for i in range(40))
    document = load_text(system(f"<Cluster>{members}<watch cdl:ref='/c33/pid'/></Cluster>"))
    res = document.resolve({"Cluster/c33/pid": "77", "Cluster/c5/pid": "5"})
    out = list_xml(res, "Cluster")
    assert "<c33><pid>77</pid></c33>" in out and "<c5><pid>5</pid></c5>" in out
    assert out.endswith("<watch>77</watch></Cluster>")
