"""The ``cdl`` command: parse options, call the library, render.

Errors print as ``file:line: [CODE] message (at /path)`` on stderr with exit
status 1; usage errors exit 2 (click's default). Nothing is written to stdout
or to ``-o`` unless resolution succeeded.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

import click

from . import Document, Limits, Resolution, load
from .deployment.journal import Journal
from .errors import CdlError
from .loading.files import write_atomically
from .resolution.output import data_json

if TYPE_CHECKING:
    from . import Deployment

F = TypeVar("F", bound=Callable[..., Any])


P = ParamSpec("P")
R = TypeVar("R")


def _reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Render CdlError as the one-line format and exit 1; never a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except CdlError as error:
            click.echo(error.render(), err=True)
            sys.exit(1)
        except (click.exceptions.Exit, click.ClickException, KeyboardInterrupt, SystemExit):
            raise
        except RecursionError:
            click.echo("cdl: the input is nested too deeply to process", err=True)
            sys.exit(1)
        except MemoryError:
            click.echo("cdl: out of memory while processing the input", err=True)
            sys.exit(1)
        except Exception as exc:  # a bug in cdl: still no traceback for the user
            click.echo(f"cdl: internal error, please report it: {type(exc).__name__}: {exc}", err=True)
            sys.exit(1)

    return wrapper


def _parse_set(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for item in values:
        path, sep, value = item.partition("=")
        if not sep or not path.strip():
            raise click.BadParameter(f"{item!r} is not LIST/PATH=VALUE")
        parsed[path.strip()] = value
    return parsed


def _paths_option(flag: str, dest: str, what: str, *, directories: bool) -> Callable[[F], F]:
    """A repeatable option naming directories or files."""
    kind = click.Path(file_okay=not directories, dir_okay=directories)
    return click.option(flag, dest, multiple=True, type=kind, help=f"{what} (repeatable).")


def _import_options(func: F) -> F:
    """Where imports may come from: the options of every command that reads imports."""
    options = [
        click.option("--allow-remote", is_flag=True, help="Allow http(s) imports (refused by default)."),
        _paths_option(
            "--import-path", "import_paths", "A directory imports may come from, besides the main document's", directories=True
        ),
        _paths_option("--catalog", "catalogs", "An OASIS XML catalog mapping import locations to local files", directories=False),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _load_options(func: F) -> F:
    options = [
        click.option("--max-elements", type=click.IntRange(min=1), help="Limit on elements produced by inheritance and references."),
        click.option("--max-depth", type=click.IntRange(min=1), help="Limit on element nesting depth."),
        click.option("--max-bytes", type=click.IntRange(min=1), help="Limit on each input document's size."),
        click.option("--max-imports", type=click.IntRange(min=0), help="Limit on the number of imported documents."),
        click.option("--max-text", type=click.IntRange(min=1), help="Limit on characters of values copied by inheritance and references."),
    ]
    for option in reversed(options):
        func = option(func)
    return _import_options(func)


def _deploy_options(func: F) -> F:
    """--set and --release: the deploy-time values every resolving command takes."""
    func = click.option(
        "--release", multiple=True, metavar="LIST/PATH", help="Release a lazy reference so it resolves (repeatable)."
    )(func)
    return click.option(
        "--set",
        "values",
        multiple=True,
        callback=_parse_set,
        metavar="LIST/PATH=VALUE",
        help="Supply a deploy-time value to a lazy property or lazy reference (repeatable).",
    )(func)


def _plan_format_option(help_text: str) -> Callable[[F], F]:
    """``--format text|json|dot|mermaid``: how a plan (or a deployment's status) is shown."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json", "dot", "mermaid"]),
        default="text",
        show_default=True,
        help=help_text,
    )


def _limits(kwargs: dict[str, Any]) -> Limits:
    names = ("max_elements", "max_depth", "max_bytes", "max_imports", "max_text")
    fields = {k: v for k in names if (v := kwargs.pop(k, None)) is not None}
    return Limits(**fields)


def _load(file: str, options: dict[str, Any]) -> Document:
    """Load FILE with the options of ``_load_options``."""
    return load(
        file,
        allow_remote=options.pop("allow_remote"),
        import_paths=options.pop("import_paths"),
        catalogs=options.pop("catalogs"),
        limits=_limits(options),
    )


def _resolve(file: str, options: dict[str, Any], values: dict[str, str], release: tuple[str, ...], validate: bool = False) -> Resolution:
    """Load FILE with the options of ``_load_options`` and resolve it; warnings go to stderr."""
    return _resolved(_load(file, options), values, release, validate)


def _resolved(document: Document, values: dict[str, str], release: tuple[str, ...], validate: bool = False) -> Resolution:
    """``document`` resolved; warnings go to stderr."""
    result = document.resolve(values, release=release, validate=validate)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    return result


class _Command(click.Command):
    """A command whose summary in ``cdl --help`` is its docstring's whole first sentence."""

    def get_short_help_str(self, limit: int = 45) -> str:
        # click cuts the summary to the terminal's width with "..."; a cut summary
        # leaves the reader guessing, so it is wrapped instead.
        return super().get_short_help_str(limit=sys.maxsize)


class _Group(_Command, click.Group):
    command_class = _Command
    group_class = type  # a group's groups are of its own class


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cdl")
def main() -> None:
    """Resolve CDL (CDDLM Configuration Description Language 1.0) documents."""


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here (atomically) instead of stdout.")
@click.option("--system-only", is_flag=True, help="Print only the resolved cdl:system.")
@_deploy_options
@click.option("--validate", is_flag=True, help="Validate against the CDL schema first, and check typed values.")
@click.option(
    "--format", "output_format", type=click.Choice(["xml", "json"]), default="xml", show_default=True,
    help="XML, or JSON (Resolution.to_data()).",
)
@click.option("--select", "select", multiple=True, metavar="LIST/PATH", help="Print only the properties this path selects (repeatable).")
@_load_options
@_reports_errors
def resolve(
    file: str,
    output: str | None,
    system_only: bool,
    values: dict[str, str],
    release: tuple[str, ...],
    validate: bool,
    output_format: str,
    select: tuple[str, ...],
    **options: Any,
) -> None:
    """Resolve FILE and print the resolved cdl:cdl document.

    The output holds the main document's resolved cdl:configuration and
    cdl:system (only the system with --system-only), as XML or JSON.
    """
    if validate:
        _validate_or_exit([file], options)
    document = _load(file, options)
    result = _resolved(document, values, release, validate)
    if output_format == "json":
        data = (data_json(result.to_data(system_only, select=select)) + "\n").encode("utf-8")
    else:
        data = result.to_bytes(system_only, select=select)
    if output:
        if document.reads(output):
            raise click.BadParameter(f"{output} is one of the input documents; input files are never overwritten", param_hint="-o")
        write_atomically(output, data)
    else:
        click.echo(data.decode("utf-8"), nl=False)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_deploy_options
@click.option("--all", "everything", is_flag=True, help="Also list the templates' (cdl:configuration) pending items.")
@_load_options
@_reports_errors
def pending(
    file: str,
    values: dict[str, str],
    release: tuple[str, ...],
    everything: bool,
    **options: Any,
) -> None:
    """List what the deployment of FILE's cdl:system waits for.

    One line per item: its path, its kind and what waits on it. Without a
    cdl:system (a template library), what its templates wait for.
    """
    result = _resolve(file, options, values, release)
    for item in result.pending if everything else result.system_pending:
        line = f"{item.path}\t{item.kind}"
        if item.waiting:
            line += "\twaited on by " + ", ".join(item.waiting)
        click.echo(line)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@_deploy_options
@_plan_format_option(
    "An indented tree, JSON (the waves of components, with what each supplies, releases and waits for),"
    " Graphviz DOT, or a Mermaid flowchart."
)
@click.option(
    "--teardown", is_flag=True, help="The order to take the system down in: each component after everything that waits on it."
)
@_load_options
@_reports_errors
def plan(
    file: str,
    values: dict[str, str],
    release: tuple[str, ...],
    fmt: str,
    teardown: bool,
    **options: Any,
) -> None:
    """Print the waves in which FILE's components can be deployed.

    Each wave holds the components whose dependencies the earlier waves deploy.
    With --teardown, the reverse: the waves in which they can be taken down.
    """
    result = _resolve(file, options, values, release).plan()
    if teardown:
        result = result.teardown()
    rendered = {"text": result.to_text, "json": result.to_json, "dot": result.to_dot, "mermaid": result.to_mermaid}[fmt]()
    click.echo(rendered, nl=False)


@main.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.argument("path", metavar="PATH")
@_deploy_options
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Text (the value, then one line per step), or JSON (a list of explanations with their steps).",
)
@_load_options
@_reports_errors
def explain(
    file: str,
    path: str,
    values: dict[str, str],
    release: tuple[str, ...],
    output_format: str,
    **options: Any,
) -> None:
    """Say why each property PATH selects has its value.

    PATH is LIST/child/..., written with the document's prefixes. For each
    property: where its value was written, inherited, overridden, referenced,
    computed or supplied.
    """
    explanations = _resolve(file, options, values, release).explain(path)
    if output_format == "json":
        click.echo(json.dumps([e.to_data() for e in explanations], indent=2, ensure_ascii=False))
    else:
        click.echo("\n".join(e.to_text() for e in explanations), nl=False)


class _DiffUsageError(click.UsageError):
    """A usage error of ``cdl diff``, which exits 1 (2 is taken: differences)."""

    exit_code = 1


class _DiffCommand(_Command):
    """``cdl diff``: exit status 2 means differences (Terraform's
    ``-detailed-exitcode``), so a usage error exits 1, as every other error."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:
            raise _DiffUsageError(error.format_message(), error.ctx) from None


@main.command(cls=_DiffCommand)
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@_deploy_options
@click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text", show_default=True,
    help="Text (like a unified diff, grouped by component), or JSON (Diff.to_data()).",
)
@click.option("--select", metavar="COMPONENT", help="Only this component (a path as cdl plan writes it).")
@_load_options
@_reports_errors
def diff(
    old: str,
    new: str,
    values: dict[str, str],
    release: tuple[str, ...],
    output_format: str,
    select: str | None,
    **options: Any,
) -> None:
    """Print what differs between the systems of OLD and NEW, and why.

    Both are resolved with the same --set and --release values. Each
    component added, removed or changed, each value that differs with its
    old and new value, and its causes: what is written differently, where,
    in each version. Exit status 0: no difference, 2: differences, 1: an
    error.
    """
    limits = dict(options)
    first = _load(old, options)
    second = _load(new, limits)
    rounds = [{"set": values, "release": list(release)}] if values or release else []
    result = first.diff(second, rounds=rounds, select=select)
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(result.to_json() if output_format == "json" else result.to_text(), nl=False)
    sys.exit(2 if result else 0)


# ---------------------------------------------------------------------------
# cdl deploy: a deployment session driven from the shell, one event per command


@main.group()
def deploy() -> None:
    """Drive FILE's deployment one event at a time, kept in a journal.

    Each command loads FILE, replays the journal given with --journal (the
    first event begins it; status, ready and config only read it), does one
    thing and closes the journal again. A command waits (--wait) while
    another one has the journal, so events may be recorded in parallel.
    Components move from waiting to ready to deployed (or failed, and blocked
    behind a failure) as Document.deploy() defines.
    """


#: How long a ``cdl deploy`` command waits for the journal by default, in seconds.
WAIT = 60.0


def _seconds(_ctx: click.Context, _param: click.Parameter, value: float) -> float:
    if math.isnan(value):
        raise click.BadParameter("give a number of seconds")
    return value


def _session_options(func: F) -> F:
    """FILE, --journal and --wait: what every ``cdl deploy`` command opens, and how."""
    func = click.option(
        "--wait",
        type=click.FloatRange(min=0),
        default=WAIT,
        show_default=True,
        callback=_seconds,
        metavar="SECONDS",
        help="While another command (or program) has the journal, wait this long for it before giving up (JOURNAL_LOCKED).",
    )(func)
    func = click.option(
        "--journal",
        required=True,
        type=click.Path(dir_okay=False),
        help="The journal of this deployment: replayed first, then appended to; the first event creates it.",
    )(func)
    return click.argument("file", type=click.Path(dir_okay=False))(func)


@contextlib.contextmanager
def _deployment(file: str, journal: str, wait: float, options: dict[str, Any], read_only: bool = False) -> Iterator[Deployment]:
    """FILE's deployment, its journal replayed (``read_only``: only read);
    closed (the journal released) on leaving."""
    document = _load(file, options)
    if document.reads(journal):
        raise click.BadParameter(f"{journal} is one of the input documents; give the journal its own file", param_hint="--journal")
    with document.deploy(journal=journal, read_only=read_only, wait=wait) as deployment:
        for warning in deployment.warnings:
            click.echo(f"warning: {warning}", err=True)
        yield deployment


def _echo_paths(paths: Iterable[str]) -> None:
    for path in paths:
        click.echo(path)


@deploy.command("status")
@_session_options
@click.argument("component", required=False)
@_plan_format_option(
    "One line per component (state, path, why), JSON (DeploymentStatus.to_data()),"
    " or the plan's DOT or Mermaid picture coloured by state."
)
@_load_options
@_reports_errors
def deploy_status(file: str, journal: str, wait: float, component: str | None, fmt: str, **options: Any) -> None:
    """Print each component's state and why it is in it.

    With COMPONENT, only that one. Why: the lazy values it still waits for and
    the component that supplies each, its children or the siblings it comes
    after that are not deployed yet, or the failed component upstream.
    """
    with _deployment(file, journal, wait, options, read_only=True) as deployment:
        result = deployment.status(component)
    if fmt == "json":
        click.echo(json.dumps(result.to_data(), indent=2, ensure_ascii=False))
    else:
        click.echo({"text": result.to_text, "dot": result.to_dot, "mermaid": result.to_mermaid}[fmt](), nl=False)


@deploy.command("ready")
@_session_options
@_load_options
@_reports_errors
def deploy_ready(file: str, journal: str, wait: float, **options: Any) -> None:
    """Print the components that may be deployed now, one path per line.

    In document order; the components of one wave may be deployed in parallel.
    """
    with _deployment(file, journal, wait, options, read_only=True) as deployment:
        _echo_paths(deployment.ready())


@deploy.command("done")
@_session_options
@click.argument("component")
@_deploy_options
@click.option(
    "--later",
    multiple=True,
    metavar="LIST/PATH",
    help="A lazy value of COMPONENT this event does not give: it comes later, with `cdl deploy set` (repeatable).",
)
@_load_options
@_reports_errors
def deploy_done(
    file: str,
    journal: str,
    wait: float,
    component: str,
    values: dict[str, str],
    release: tuple[str, ...],
    later: tuple[str, ...],
    **options: Any,
) -> None:
    """Record that COMPONENT is deployed, with the values it supplies.

    COMPONENT must be ready (NOT_READY otherwise, naming what it waits for).
    --set and --release go into the same event; every lazy value COMPONENT
    supplies or releases is given there or named with --later
    (VALUES_MISSING otherwise), and only COMPONENT's own (NOT_OWNER). Prints
    the components that became ready because of it, one path per line.
    """
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.deployed(component, values, release, later))


@deploy.command("fail")
@_session_options
@click.argument("component")
@click.option("--reason", required=True, help="Why the deployment of COMPONENT failed (shown by status).")
@_load_options
@_reports_errors
def deploy_fail(file: str, journal: str, wait: float, component: str, reason: str, **options: Any) -> None:
    """Record that the deployment of COMPONENT failed.

    Prints the components now blocked by it (directly or through others), one
    path per line.
    """
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.failed(component, reason))


@deploy.command("retry")
@_session_options
@click.argument("component")
@_load_options
@_reports_errors
def deploy_retry(file: str, journal: str, wait: float, component: str, **options: Any) -> None:
    """Take a failed COMPONENT back, with the components it blocked.

    Prints the components ready again because of it, one path per line.
    """
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.retry(component))


@deploy.command("set")
@_session_options
@_deploy_options
@_load_options
@_reports_errors
def deploy_set(file: str, journal: str, wait: float, values: dict[str, str], release: tuple[str, ...], **options: Any) -> None:
    """Record deploy-time values that no component's deployment reports.

    One event with every --set and --release. A value already supplied may be
    given again; a different one is refused (SET_CONFLICT). Prints the
    components that became ready because of it, one path per line.
    """
    if not values and not release:
        raise click.UsageError("give at least one --set or --release")
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.supply(values, release))


@deploy.command("update")
@_session_options
@click.option(
    "--from",
    "running",
    type=click.Path(dir_okay=False),
    help="The documents the deployment runs now (default: the main document its journal names, as it was given).",
)
@_load_options
@_reports_errors
def deploy_update(file: str, journal: str, wait: float, running: str | None, **options: Any) -> None:
    """Move the deployment to FILE, the system's next version, as one event.

    The values supplied so far carry over, and the state of every component
    whose configuration is the same; one deployed whose configuration changed
    is `changed` (status says what and why), one FILE no longer has is
    `removing`. Prints the components ready now (to deploy, or to deploy again),
    one path per line.
    """
    new = _load(file, dict(options))
    if running is None:
        documents = Journal.documents(journal, wait)
        if not documents:
            raise click.UsageError(f"{journal} records no documents yet: there is nothing to update")
        running = documents[0]
    with _deployment(running, journal, wait, options) as deployment:
        _echo_paths(deployment.update(new))


@deploy.command("teardown")
@_session_options
@_load_options
@_reports_errors
def deploy_teardown(file: str, journal: str, wait: float, **options: Any) -> None:
    """Begin taking the whole system down, as one event.

    Every component is `removing` until reported with `cdl deploy removed`;
    one may be removed once everything that waits on it is. Prints the
    components that may be removed now, one path per line.
    """
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.teardown())


@deploy.command("removed")
@_session_options
@click.argument("component")
@_load_options
@_reports_errors
def deploy_removed(file: str, journal: str, wait: float, component: str, **options: Any) -> None:
    """Record that COMPONENT is removed (taken down, or left by an update).

    Prints the components that may be removed now because of it, one path per line.
    """
    with _deployment(file, journal, wait, options) as deployment:
        _echo_paths(deployment.removed(component))


@deploy.command("removable")
@_session_options
@_load_options
@_reports_errors
def deploy_removable(file: str, journal: str, wait: float, **options: Any) -> None:
    """Print the components that may be removed now, one path per line."""
    with _deployment(file, journal, wait, options, read_only=True) as deployment:
        _echo_paths(deployment.removable())


@deploy.command("config")
@_session_options
@click.argument("component")
@click.option(
    "--format", "output_format", type=click.Choice(["xml", "json"]), default="xml", show_default=True,
    help="XML (the resolved document cut down to COMPONENT), or JSON (as Resolution.to_data() shapes it).",
)
@_load_options
@_reports_errors
def deploy_config(file: str, journal: str, wait: float, component: str, output_format: str, **options: Any) -> None:
    """Print the resolved configuration of COMPONENT with every value supplied so far.

    What is still pending is printed as pending, as cdl resolve prints it.
    """
    with _deployment(file, journal, wait, options, read_only=True) as deployment:
        if output_format == "json":
            click.echo(data_json(deployment.configuration(component)))
        else:
            click.echo(deployment.configuration(component, format="xml").decode("utf-8"), nl=False)


@main.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_import_options
@_reports_errors
def validate(files: tuple[str, ...], **options: Any) -> None:
    """Check FILES and their imports against the CDL schema.

    Every violation is reported; imports are found as cdl resolve finds them.
    """
    _validate_or_exit(list(files), options)
    click.echo(f"{len(files)} document(s) valid", err=True)


@main.command()
def lsp() -> None:
    """Run the language server for editors (LSP on stdin and stdout).

    Needs the extra: pip install 'cdl[lsp]'. The editor's client starts it
    and gives its settings as initializationOptions: importPaths, catalogs
    and allowRemote, as --import-path, --catalog and --allow-remote.
    """
    try:
        from .lsp.server import serve
    except ImportError as exc:  # pygls or lsprotocol missing: the extra is not installed
        click.echo(f"cdl lsp needs pygls ({exc}); install it with: pip install 'cdl[lsp]'", err=True)
        sys.exit(1)
    serve()


@main.command()
@click.argument("suite_dir", required=False, type=click.Path(file_okay=False))
@click.option("--processor", metavar='"COMMAND {input}"', help="Check another CDL processor instead of this engine.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--timeout", type=float, default=60.0, show_default=True, help="Seconds per case for --processor.")
@click.option(
    "--plan-processor",
    metavar='"COMMAND {input}"',
    help="With --processor: the command printing a plan as JSON, for cases that expect one.",
)
@click.option("--list", "list_only", is_flag=True, help="List the cases (section, name, what each expects) instead of running them.")
@_reports_errors
def conformance(
    suite_dir: str | None,
    processor: str | None,
    junit: str | None,
    timeout: float,
    plan_processor: str | None,
    list_only: bool,
) -> None:
    """Run the conformance suite and report per section.

    SUITE_DIR defaults to the suite installed with cdl.
    """
    from .conformance import bundled_suite, list_suite, load_suite, run_suite

    directory = Path(suite_dir) if suite_dir else bundled_suite()
    if not directory.is_dir():
        what = f"{directory} is not a directory" if suite_dir else f"the bundled suite is missing ({directory}): give SUITE_DIR"
        raise click.BadParameter(what, param_hint="SUITE_DIR")
    if list_only:
        click.echo(list_suite(load_suite(directory)), nl=False)
        return
    if processor is not None and "{input}" not in processor:
        raise click.BadParameter("the command must contain {input}", param_hint="--processor")
    if plan_processor is not None and ("{input}" not in plan_processor or processor is None):
        raise click.BadParameter("give it with --processor, and with {input} in the command", param_hint="--plan-processor")
    sys.exit(
        run_suite(directory, processor=processor, junit=junit, echo=click.echo, timeout=timeout, plan_processor=plan_processor)
    )


def _validate_or_exit(files: list[str], options: dict[str, Any]) -> None:
    """Validate ``files`` and their imports, found with the options of ``_import_options``."""
    from .validate import validate_documents

    errors = validate_documents(
        files, allow_remote=options["allow_remote"], import_paths=options["import_paths"], catalogs=options["catalogs"]
    )
    if errors:
        for error in errors:
            click.echo(error.render(), err=True)
        sys.exit(1)



if __name__ == "__main__":  # pragma: no cover
    main()
