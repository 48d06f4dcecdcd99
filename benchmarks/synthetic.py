"""A synthetic CDL system of N components, for benchmarks and tests (private).

    python benchmarks/synthetic.py N OUTDIR [--shape base|fanin|fanout|wide]

writes ``OUTDIR/templates.cdl`` (component templates, published in
``urn:cdl-bench:templates``) and ``OUTDIR/system.cdl`` (shared settings and a
``cdl:system`` of N components; it imports the templates). The output depends
only on N and the shape: no randomness, no clock. The benchmarks and the
tests share this generator (``tests/conftest.py`` puts ``benchmarks/`` on the
tests' path). The engine never imports it.

What the documents exercise (the parts of CDL 1.0 a deployment service meets):

- templates: a shared ``Defaults`` list, an ``Endpoint`` list, a ``Component``
  root, 5 family templates, 10 kind templates and 40 variants; a component
  extends a kind or a variant, so above it are 2 or 3 levels of inheritance
  (``Component`` <- family <- kind [<- variant]); templates override what they
  inherit and hold nested ``cdl:extends`` (``listen`` extends ``Endpoint``),
  and a third of the web services and caches override ``listen`` again;
- nested lists and repeated names (``labels/label``, ``env/var``, ``topics``);
- references inside a list (``listen/host`` -> ``/name``, ``env`` -> ``/peer``),
  across lists (``peer`` -> another component, through ``cdl:refroot``, whose
  target is itself a reference), and ``cdl:refroot`` into the shared settings
  (``Settings``, which extends the templates' ``Defaults``), one of them
  selecting a list with children (``timeouts``);
- one ``cdl:expression`` per component (inherited from ``Component``), whose
  variables wait on references;
- lazy properties (every worker's ``pid``, the settings' ``clock``),
  references waiting on them (every 20th component watches a worker's pid),
  and lazy references (every 50th component's ``deployedAt``); all of these
  stay pending after static resolution.

Shapes (the fan count is N // 2: 10,000 at N = 20,000):

- ``base``: components spread round-robin over the 50 leaf templates;
- ``fanin``: as base, and N // 2 components also reference one shared list
  (``Catalog/entries``, 25 elements) with ``cdl:refroot``;
- ``fanout``: as base, but N // 2 components extend one template
  (``t:FrontendV0``);
- ``wide``: as base, but the N components are the children of one list
  (``Cluster``) instead of N top level lists, so they refer to each other by
  name through that list (``../../svc000123/listen/host``) rather than with
  ``cdl:refroot``: the peer (distance 7i+3), the next component (distance 1)
  and the supervised worker; references written in the system are relative
  (an absolute path would start at ``Cluster``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator

from cdl import CDL_NS

TEMPLATES_NS = "urn:cdl-bench:templates"
SHAPES = ("base", "fanin", "fanout", "wide")

# family -> (kinds, what the family template adds)
_FAMILIES: dict[str, tuple[tuple[str, ...], str]] = {
    "WebService": (
        ("Frontend", "ApiGateway"),
        """      <listen cdl:extends="Endpoint">
        <host cdl:ref="/name"/>
        <port>8080</port>
      </listen>
      <workers cdl:type="xsd:positiveInteger">4</workers>
""",
    ),
    "Database": (
        ("Postgres", "MySQL"),
        """      <listen cdl:extends="Endpoint">
        <protocol>tcp</protocol>
        <host cdl:ref="/name"/>
        <port>5432</port>
      </listen>
      <storage><size>20Gi</size><class>ssd</class></storage>
      <user>app</user>
""",
    ),
    "Cache": (
        ("Redis", "Memcached"),
        """      <listen cdl:extends="Endpoint">
        <protocol>tcp</protocol>
        <host cdl:ref="/name"/>
        <port>6379</port>
      </listen>
      <maxMemory>512mb</maxMemory>
""",
    ),
    "Queue": (
        ("Kafka", "RabbitMQ"),
        """      <partitions cdl:type="xsd:positiveInteger">12</partitions>
      <topics><topic>events</topic><topic>audit</topic></topics>
""",
    ),
    "Worker": (
        ("BatchWorker", "StreamWorker"),
        """      <pid cdl:lazy="true"/>
      <concurrency cdl:type="xsd:positiveInteger">8</concurrency>
""",
    ),
}

# kind -> what the kind template adds or overrides
_KINDS: dict[str, str] = {
    "Frontend": "      <workers>8</workers>\n      <staticPath>/srv/static</staticPath>\n",
    "ApiGateway": "      <routes><route>/api</route><route>/auth</route></routes>\n      <rateLimit>1000</rateLimit>\n",
    "Postgres": "      <version>16.3</version>\n      <extensions><ext>pgcrypto</ext><ext>postgis</ext></extensions>\n",
    "MySQL": (
        '      <listen cdl:extends="Endpoint">\n        <protocol>tcp</protocol>\n'
        '        <host cdl:ref="/name"/>\n        <port>3306</port>\n      </listen>\n'
    ),
    "Redis": "      <evictionPolicy>allkeys-lru</evictionPolicy>\n",
    "Memcached": "      <maxMemory>1024mb</maxMemory>\n      <threads>4</threads>\n",
    "Kafka": "      <partitions>48</partitions>\n      <retentionHours>168</retentionHours>\n",
    "RabbitMQ": "      <vhost>/</vhost>\n",
    "BatchWorker": "      <schedule>0 * * * *</schedule>\n",
    "StreamWorker": "      <concurrency>32</concurrency>\n      <source>events</source>\n",
}
_VARIANTS = 4
_TIERS = ("gold", "silver", "bronze", "dev")


def leaf_templates() -> list[str]:
    """The templates components extend: each kind, and its variants."""
    leaves: list[str] = []
    for kind in _KINDS:
        leaves.append(kind)
        leaves.extend(f"{kind}V{v}" for v in range(_VARIANTS))
    return leaves


def _family_of(template: str) -> str:
    kind = template.rsplit("V", 1)[0] if template[-2:-1] == "V" else template
    return next(f for f, (kinds, _) in _FAMILIES.items() if kind in kinds)


def templates_document() -> str:
    """The template document (independent of N)."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        "<!-- Synthetic component templates for the cdl benchmark (benchmarks/synthetic.py). -->\n",
        f'<cdl:cdl xmlns:cdl="{CDL_NS}"\n'
        '         xmlns:xsd="http://www.w3.org/2001/XMLSchema"\n'
        f'         targetNamespace="{TEMPLATES_NS}">\n',
        "  <cdl:configuration>\n",
        """    <Defaults>
      <region>eu-west-1</region>
      <logLevel>info</logLevel>
      <registry>registry.example.com/bench</registry>
      <timeouts><connect>5</connect><read>30</read><idle>300</idle></timeouts>
      <ports><port>80</port><port>443</port></ports>
    </Defaults>

    <Endpoint>
      <protocol>http</protocol>
      <host cdl:type="xsd:string"/>
      <port cdl:type="xsd:positiveInteger">80</port>
      <path>/</path>
    </Endpoint>

    <Component>
      <name cdl:type="xsd:string" cdl:use="required"/>
      <version cdl:type="xsd:string">1.0.0</version>
      <replicas cdl:type="xsd:positiveInteger">1</replicas>
      <tier>dev</tier>
      <region cdl:refroot="Defaults" cdl:ref="/region"/>
      <logLevel cdl:refroot="Defaults" cdl:ref="/logLevel"/>
      <listen cdl:extends="Endpoint">
        <host cdl:ref="/name"/>
      </listen>
      <health>
        <url><cdl:expression value-of="concat($proto, '://', $host, ':', $port, $path)">
            <cdl:variable name="proto" ref="/listen/protocol"/>
            <cdl:variable name="host" ref="/listen/host"/>
            <cdl:variable name="port" ref="/listen/port"/>
            <cdl:variable name="path" ref="/listen/path"/>
          </cdl:expression></url>
        <interval>10</interval>
      </health>
    </Component>

""",
    ]
    for family, (kinds, body) in _FAMILIES.items():
        out.append(f'    <{family} cdl:extends="Component">\n{body}    </{family}>\n')
        for kind in kinds:
            out.append(f'    <{kind} cdl:extends="{family}">\n{_KINDS[kind]}    </{kind}>\n')
            for v in range(_VARIANTS):
                out.append(
                    f'    <{kind}V{v} cdl:extends="{kind}">\n'
                    f"      <tier>{_TIERS[v]}</tier>\n"
                    f"      <replicas>{v + 2}</replicas>\n"
                    f"    </{kind}V{v}>\n"
                )
        out.append("\n")
    out.append("  </cdl:configuration>\n</cdl:cdl>\n")
    return "".join(out)


def _name(i: int) -> str:
    return f"svc{i:06d}"


def system_chunks(n: int, shape: str = "base") -> Iterator[str]:
    """The system document, in pieces (about 650 bytes per component; the
    resolved output is about 1.3 kB and 39 elements per component)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    leaves = leaf_templates()
    fan = n // 2
    kinds = [leaves[i % len(leaves)] for i in range(n)]
    if shape == "fanout":
        for i in range(0, 2 * fan, 2):
            kinds[i] = "FrontendV0"
    workers = [i for i, k in enumerate(kinds) if _family_of(k) == "Worker"]
    yield _system_opening(n, shape)
    wide = shape == "wide"
    if wide:
        yield "    <Cluster>\n"
    buf: list[str] = []
    for i in range(n):
        buf.append(_component(i, n, kinds[i], workers, shape))
        if len(buf) >= 1000:
            yield "".join(buf)
            buf.clear()
    if buf:
        yield "".join(buf)
    if wide:
        yield "    </Cluster>\n"
    yield "  </cdl:system>\n</cdl:cdl>\n"


def _system_opening(n: int, shape: str) -> str:
    """The system document up to its first component: the import and the
    configuration (settings, and the catalog of the fanin shape)."""
    opening = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<!-- Synthetic system of {n} components, shape {shape} (benchmarks/synthetic.py). -->\n"
        f'<cdl:cdl xmlns:cdl="{CDL_NS}"\n'
        f'         xmlns:t="{TEMPLATES_NS}">\n'
        '  <cdl:import location="templates.cdl"/>\n'
        "  <cdl:configuration>\n"
        '    <Settings cdl:extends="t:Defaults">\n'
        "      <region>us-east-1</region>\n"
        "      <logLevel>warn</logLevel>\n"
        '      <clock cdl:lazy="true"/>\n'
        "    </Settings>\n"
    )
    if shape == "fanin":
        entries = "".join(
            f"        <entry><sku>sku-{k}</sku><price>{10 + k}.50</price></entry>\n" for k in range(8)
        )
        opening += (
            "    <Catalog>\n      <entries>\n"
            f"{entries}"
            '        <region cdl:refroot="Settings" cdl:ref="/region"/>\n'
            "      </entries>\n    </Catalog>\n"
        )
    return opening + "  </cdl:configuration>\n\n  <cdl:system>\n"


def _component(i: int, n: int, kind: str, workers: list[int], shape: str) -> str:
    """Component ``i`` of ``n``, of template ``kind``."""
    name = _name(i)
    family = _family_of(kind)
    peer = _name((i * 7 + 3) % n)
    wide = shape == "wide"
    p = [f'    <{name} cdl:extends="t:{kind}">\n      <name>{name}</name>\n']
    own_host = 'cdl:ref="../name"' if wide else 'cdl:ref="/name"'
    if i % 4 == 0:
        p.append(f"      <version>2.{i % 10}.{i % 3}</version>\n")
    if i % 5 == 0:
        p.append(f"      <replicas>{1 + i % 7}</replicas>\n")
    if family in ("WebService", "Cache") and i % 3 == 0:
        # Override of a nested list, itself extending a template.
        p.append(
            '      <listen cdl:extends="t:Endpoint">\n'
            f"        <host {own_host}/>\n"
            f"        <port>{8000 + i % 1000}</port>\n"
            "      </listen>\n"
        )
    if wide:
        # Siblings in one list, found by name: "../.." climbs from the
        # property's parent to the component, then to Cluster.
        peer_host = f'cdl:ref="../../{peer}/listen/host"'
        peer_port = f'cdl:ref="../../{peer}/listen/port"'
        env_peer = 'cdl:ref="../../peer/host"'
    else:
        peer_host = f'cdl:refroot="{peer}" cdl:ref="/listen/host"'
        peer_port = f'cdl:refroot="{peer}" cdl:ref="/listen/port"'
        env_peer = 'cdl:ref="/peer/host"'
    p.append(
        f"      <labels><label>team-{i % 17}</label><label>zone-{i % 3}</label></labels>\n"
        "      <peer>\n"
        f"        <host {peer_host}/>\n"
        f"        <port {peer_port}/>\n"
        "      </peer>\n"
        "      <env>\n"
        '        <var><key>REGION</key><value cdl:refroot="Settings" cdl:ref="/region"/></var>\n'
        f"        <var><key>PEER</key><value {env_peer}/></var>\n"
        '        <var><key>PEER_PORT</key><value cdl:ref="../../peer/port"/></var>\n'
        "      </env>\n"
        '      <timeouts cdl:refroot="Settings" cdl:ref="/timeouts"/>\n'
    )
    if wide:
        p.append(f'      <next cdl:ref="../{_name((i + 1) % n)}/name"/>\n')
    if i % 20 == 7 and workers:
        watched = _name(workers[(i // 20) % len(workers)])
        if wide:
            p.append(f'      <supervisorPid cdl:ref="../{watched}/pid"/>\n')
        else:
            p.append(f'      <supervisorPid cdl:refroot="{watched}" cdl:ref="/pid"/>\n')
    if i % 50 == 11:
        p.append('      <deployedAt cdl:refroot="Settings" cdl:ref="/clock" cdl:lazy="true"/>\n')
    if shape == "fanin" and i % 2 == 0 and i < 2 * (n // 2):
        p.append('      <catalog cdl:refroot="Catalog" cdl:ref="/entries"/>\n')
    p.append(f"    </{name}>\n")
    return "".join(p)


def generate(n: int, outdir: str | os.PathLike[str], shape: str = "base") -> tuple[str, str]:
    """Write templates.cdl and system.cdl into ``outdir``; return their paths."""
    os.makedirs(outdir, exist_ok=True)
    templates = os.path.join(outdir, "templates.cdl")
    system = os.path.join(outdir, "system.cdl")
    with open(templates, "w", encoding="utf-8") as handle:
        handle.write(templates_document())
    with open(system, "w", encoding="utf-8") as handle:
        for chunk in system_chunks(n, shape):
            handle.write(chunk)
    return templates, system


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("n", type=int, help="number of components (at least 1)")
    parser.add_argument("outdir", help="directory for templates.cdl and system.cdl")
    parser.add_argument("--shape", choices=SHAPES, default="base")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("N must be at least 1")
    templates, system = generate(args.n, args.outdir, args.shape)
    print(f"wrote {templates} and {system}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
