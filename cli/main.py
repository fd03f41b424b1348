"""The ``trine`` command: a thin layer over ``trine.Store`` (see docs/cli.md).

Each command parses its options, calls one Store method, and prints the
result; errors become one ``trine: error: ...`` line and a non-zero exit.
"""

from __future__ import annotations

import json
import sys
import time
from contextlib import contextmanager
from typing import Iterator

import click

from trine import Store
from trine.store.database import StoreError
from trine.store.ntriples import ParseError

EXIT_INPUT = 1   # bad input file or query
EXIT_STORE = 2   # store cannot be opened or is inconsistent


def fail(message: str, code: int = EXIT_INPUT) -> "click.exceptions.Exit":
    click.echo(f"trine: error: {message}", err=True)
    raise click.exceptions.Exit(code)


@contextmanager
def errors_as_messages() -> Iterator[None]:
    try:
        yield
    except ParseError as e:
        fail(f"{e} (nothing was changed)")
    except StoreError as e:
        fail(str(e), EXIT_STORE)
    except FileNotFoundError as e:
        fail(f"{e.filename}: no such file")
    except OverflowError as e:
        fail(str(e), EXIT_STORE)


def open_store(path: str, create: bool = False, readonly: bool = False) -> Store:
    return Store.open(path, create=create, readonly=readonly)


class Progress:
    """A rich progress display on a terminal; silence when stderr is piped."""

    def __init__(self, enabled: bool):
        self.enabled = enabled and sys.stderr.isatty()
        self._progress = None
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> "Progress":
        if self.enabled:
            from rich.progress import Progress as RichProgress, SpinnerColumn, TextColumn, TimeElapsedColumn
            self._progress = RichProgress(SpinnerColumn(), TextColumn("{task.description}"),
                                          TextColumn("{task.completed:,} triples"), TimeElapsedColumn(),
                                          transient=True)
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def __call__(self, stage: str, n: int) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(stage)
        if task is None:
            for other in self._tasks.values():
                self._progress.update(other, visible=False)
            task = self._tasks[stage] = self._progress.add_task(stage, total=None)
        self._progress.advance(task, n)


def report_skipped(skipped: list[ParseError]) -> None:
    if not skipped:
        return
    click.echo(f"trine: skipped {len(skipped)} invalid line(s):", err=True)
    for e in skipped[:20]:
        click.echo(f"  {e}", err=True)
    if len(skipped) > 20:
        click.echo(f"  ... and {len(skipped) - 20} more", err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="trine")
def main() -> None:
    """trine: an embedded RDF store that keeps its RDFS (rho-df) materialisation current."""


@main.command()
@click.argument("db", type=click.Path(file_okay=False))
@click.argument("files", nargs=-1, required=True)
@click.option("--engine", type=click.Choice(["auto", "local", "spark"]), default="auto", show_default=True,
              help="in-process (local) or Spark closure; auto picks by input size")
@click.option("--skip-invalid", is_flag=True, help="load the valid lines and report the invalid ones")
@click.option("--master", default=None, help="Spark master URL (spark://..., yarn, k8s://..., local[*])")
@click.option("--spark-conf", multiple=True, metavar="K=V", help="extra Spark configuration (repeatable)")
@click.option("--work-dir", default=None, help="Spark working directory (may be shared storage)")
@click.option("--quiet", "-q", is_flag=True, help="no progress display")
def load(db: str, files: tuple[str, ...], engine: str, skip_invalid: bool, master: str | None,
         spark_conf: tuple[str, ...], work_dir: str | None, quiet: bool) -> None:
    """Bulk load N-Triples FILES (plain or .gz, '-' for stdin) into DB and materialise.

    DB is created if needed.  Loading into a non-empty store merges the new
    triples with the existing ones.  The store is replaced only when the new
    one is complete: a bad line or a crash leaves it exactly as it was.
    """
    spark = {}
    if engine != "local":
        if master:
            spark["master"] = master
        if spark_conf:
            spark["conf"] = dict(kv.split("=", 1) for kv in spark_conf)
        if work_dir:
            spark["work_dir"] = work_dir
    with errors_as_messages(), open_store(db, create=True) as store, Progress(not quiet) as progress:
        t0 = time.perf_counter()
        rep = store.load(list(files), engine=engine, skip_invalid=skip_invalid, progress=progress, **spark)
        dt = time.perf_counter() - t0
    report_skipped(rep.skipped)
    click.echo(f"loaded {rep.input_triples:,} input triples ({rep.explicit:,} distinct explicit) -> "
               f"{rep.triples:,} triples after materialisation in {dt:.2f}s "
               f"({rep.input_triples / dt if dt else 0:,.0f} triples/s, engine {rep.engine})", err=True)


def _update(db: str, files: tuple[str, ...], remove: bool, skip_invalid: bool, algorithm: str) -> None:
    errors: list[ParseError] = []
    with errors_as_messages(), open_store(db, create=not remove) as store:
        t0 = time.perf_counter()
        if remove:
            rep = store.remove_files(list(files), algorithm=algorithm, skip_invalid=skip_invalid, errors=errors)
        else:
            rep = store.add_files(list(files), skip_invalid=skip_invalid, errors=errors)
        dt = time.perf_counter() - t0
    report_skipped(errors)
    if remove:
        click.echo(f"removed {rep.explicit_removed:,} explicit triples ({rep.still_derived:,} of them still "
                   f"derived), {rep.derived_removed:,} derived triples no longer hold; "
                   f"{rep.affected:,} re-examined in {dt * 1000:.1f} ms", err=True)
        if rep.not_explicit:
            click.echo(f"note: {len(rep.not_explicit):,} triple(s) were not explicit in the store; "
                       "removing them changes nothing", err=True)
    else:
        click.echo(f"added {rep.explicit_added:,} new explicit triples, made {rep.made_explicit:,} derived "
                   f"triples explicit ({rep.already_explicit:,} were explicit already), derived "
                   f"{rep.derived_added:,} new triples in {dt * 1000:.1f} ms", err=True)


@main.command()
@click.argument("db", type=click.Path(file_okay=False))
@click.argument("files", nargs=-1, required=True)
@click.option("--skip-invalid", is_flag=True, help="apply the valid lines and report the invalid ones")
def add(db: str, files: tuple[str, ...], skip_invalid: bool) -> None:
    """Add the triples of FILES ('-' for stdin) as explicit and update the materialisation.

    The whole update is one transaction: on any error nothing changes.
    """
    _update(db, files, remove=False, skip_invalid=skip_invalid, algorithm="counting")


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
@click.argument("files", nargs=-1, required=True)
@click.option("--algorithm", type=click.Choice(["counting", "dred"]), default="counting", show_default=True,
              help="deletion algorithm: trine's step-aware counting, or DRed (same result)")
@click.option("--skip-invalid", is_flag=True, help="apply the valid lines and report the invalid ones")
def remove(db: str, files: tuple[str, ...], algorithm: str, skip_invalid: bool) -> None:
    """Remove the explicit triples of FILES ('-' for stdin) and update the materialisation.

    Triples that are not explicit are left alone (reported).  A removed
    triple that is still derivable stays, as a derived triple.
    """
    _update(db, files, remove=True, skip_invalid=skip_invalid, algorithm=algorithm)


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
@click.option("--explicit-only", is_flag=True, help="only explicit triples")
@click.option("--annotate", is_flag=True, help="append '# explicit=E count=C step=S' to each line")
def dump(db: str, explicit_only: bool, annotate: bool) -> None:
    """Write the store as N-Triples to standard output, sorted by statement text."""
    with errors_as_messages(), open_store(db, readonly=True) as store:
        out = click.get_text_stream("stdout")
        store.dump(out, annotate=annotate, explicit_only=explicit_only)


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
def stats(db: str, as_json: bool) -> None:
    """Triples (explicit and derived), terms, size on disk and bytes per triple."""
    with errors_as_messages(), open_store(db, readonly=True) as store:
        st = store.stats()
    if as_json:
        click.echo(json.dumps(st, indent=2))
        return
    bpt = f"{st['bytes_per_triple']:.1f}" if st["bytes_per_triple"] else "-"
    click.echo(f"store         {st['path']}\n"
               f"triples       {st['triples']:,}\n"
               f"  explicit    {st['explicit']:,}\n"
               f"  derived     {st['derived']:,}\n"
               f"terms         {st['terms']:,}\n"
               f"ruleset       {st['ruleset']}\n"
               f"size on disk  {st['bytes_on_disk']:,} bytes ({bpt} bytes/triple)")


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
@click.option("--deep", is_flag=True, help="also recompute the materialisation and compare records")
def check(db: str, deep: bool) -> None:
    """Check that the six indexes agree, ids decode and records are well formed."""
    with errors_as_messages(), open_store(db, readonly=True) as store:
        rep = store.check(deep=deep)
    if rep.ok:
        click.echo(f"ok: {rep.triples:,} triples, {rep.terms:,} terms"
                   + (", materialisation verified" if deep else ""))
        return
    click.echo(f"FAULTS in {db}:", err=True)
    for p in rep.problems:
        click.echo(f"  {p}", err=True)
    raise click.exceptions.Exit(EXIT_STORE)


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
@click.argument("query", required=False)
@click.option("-f", "--file", "query_file", type=click.File("r"), help="read the query from a file")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "tsv", "json"]), default=None,
              help="output format (default: table on a terminal, tsv otherwise)")
@click.option("--explicit-only", is_flag=True, help="match explicit triples only")
@click.option("--explain", is_flag=True, help="print the plan with estimated and actual cardinalities")
def query(db: str, query: str | None, query_file, fmt: str | None, explicit_only: bool, explain: bool) -> None:
    """Run a SPARQL-ish SELECT or ASK query (text or -f FILE)."""
    from trine.query.errors import QueryError
    from trine.query.results import write_results
    if query_file is not None:
        text = query_file.read()
    elif query is not None:
        text = query
    else:
        fail("give a query as an argument or with -f FILE")
    if fmt is None:
        fmt = "table" if sys.stdout.isatty() else "tsv"
    with errors_as_messages(), open_store(db, readonly=True) as store:
        try:
            if explain:
                click.echo(store.explain(text, explicit_only=explicit_only))
                return
            result = store.query(text, explicit_only=explicit_only)
            write_results(result, fmt, click.get_text_stream("stdout"))
        except QueryError as e:
            fail(str(e))


@main.command()
@click.argument("db", type=click.Path(exists=True, file_okay=False))
def repl(db: str) -> None:
    """Interactive queries: SPARQL-ish or bare triple patterns (.help for commands)."""
    from trine.cli.repl import run_repl
    with errors_as_messages(), open_store(db, readonly=True) as store:
        run_repl(store)


@main.command()
@click.argument("files", nargs=-1, required=True)
@click.option("--out", "-o", required=True, help="output directory (parquet) or file (nt)")
@click.option("--format", "fmt", type=click.Choice(["parquet", "nt"]), default="parquet", show_default=True)
@click.option("--master", default=None, help="Spark master URL")
@click.option("--spark-conf", multiple=True, metavar="K=V", help="extra Spark configuration (repeatable)")
def materialise(files: tuple[str, ...], out: str, fmt: str, master: str | None, spark_conf: tuple[str, ...]) -> None:
    """Compute the closure of N-Triples FILES with Spark and export it, without building a store."""
    from trine.reasoning.spark.job import materialise_files
    opts = {}
    if master:
        opts["master"] = master
    if spark_conf:
        opts["conf"] = dict(kv.split("=", 1) for kv in spark_conf)
    with errors_as_messages():
        n = materialise_files(list(files), out, fmt, **opts)
    click.echo(f"wrote {n:,} triples to {out}", err=True)


if __name__ == "__main__":
    main()
