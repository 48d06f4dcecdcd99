"""The suggestion rule itself (``model.suggest``): nearest names first, at most
the limit, case-blind, qualified names by local name, one wording
(tests/test_suggest.py has the suggestions every site makes)."""

from __future__ import annotations

from cdl.model.suggest import did_you_mean, nearest


def test_the_closest_come_first_and_at_most_the_limit() -> None:
    names = ["hostnames", "port", "hostname", "host", "hostName2"]
    assert nearest("hostnam", names) == ["hostname", "hostnames", "hostName2"]
    assert nearest("hostnam", names, limit=1) == ["hostname"]
    # equally close: as the candidates come
    assert nearest("abc", ["abx", "xbc", "abc2"]) == ["abc2", "abx", "xbc"]


def test_nothing_close_suggests_nothing() -> None:
    assert nearest("zzz", ["port", "hostname"]) == []
    assert did_you_mean("zzz", ["port", "hostname"]) == ""
    assert did_you_mean("port", []) == ""
    # the name itself is no suggestion; duplicates count once
    assert nearest("port", ["port", "Port", "Port"]) == ["Port"]


def test_case_does_not_count() -> None:
    assert nearest("webapp", ["WebApp", "Other"]) == ["WebApp"]
    assert nearest("HOSTNAME", ["hostname"]) == ["hostname"]


def test_qualified_names_compare_by_local_name_same_prefix_first() -> None:
    assert nearest("t:WebAp", ["t:WebApp", "t:Other"]) == ["t:WebApp"]
    assert nearest("WebApp", ["t:WebApp"]) == ["t:WebApp"]
    assert nearest("t:WebApp", ["x:WebApp", "t:WebApp2", "WebApp"])[:2] == ["x:WebApp", "WebApp"]
    assert nearest("t:WebAp", ["x:WebApp", "t:WebApp"]) == ["t:WebApp", "x:WebApp"]
    # a path is compared by its last step
    assert nearest("prot", ["/Tomcat/tmpl:port", "/Tomcat/host", "/port/x"]) == ["/Tomcat/tmpl:port"]


def test_the_one_wording() -> None:
    assert did_you_mean("hostnam", ["hostname"]) == "; did you mean hostname?"
    assert did_you_mean("hostnam", ["hostnames", "hostname"]) == "; did you mean hostname or hostnames?"
    assert did_you_mean("hostnam", ["hostnames", "hostname", "hostName2", "host"]) == "; did you mean hostname, hostnames or hostName2?"
