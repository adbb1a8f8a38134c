"""The ``context-service`` command: serve, worker, migrate, projections status|rebuild, ..."""

from __future__ import annotations

import argparse
import logging
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from context_service import logs
from context_service.config import Settings, SettingsError
from context_service.stop_signals import ShutdownRequested, StopSignals

if TYPE_CHECKING:
    from rich.progress import Progress

log = logging.getLogger("context_service")


def _settle_heap() -> None:
    """After start-up: move what lives for the whole process (modules, routes, caches) out of
    the collector's sight, and collect the young generation less often. A write allocates a few
    hundred short-lived objects; with the default threshold the cyclic collector ran every few
    requests and cost about a twentieth of the write path's time."""
    import gc

    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


SWITCH_INTERVAL = 0.001  # seconds


def _share_the_interpreter() -> None:
    """A thread holding Python's lock (a corpus load, a projection batch) gives it up after
    ``SWITCH_INTERVAL`` when another thread asks, instead of the default 5 ms: a request waits
    that long each time it takes the lock back after reading from the database or the
    network (the query route's p95 while indexes load: bench_packs)."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def _listener(settings: Settings) -> socket.socket:
    """The HTTP socket, bound before anything starts (as uvicorn binds: reusing an address in
    TIME_WAIT), so that a port in use is one line at once, not a log line after start-up."""
    family = socket.AF_INET6 if ":" in settings.listen_host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.listen_host, settings.listen_port))
    except OSError:
        sock.close()
        raise
    return sock


def _url(settings: Settings) -> str:
    host = settings.listen_host
    return f"http://{f'[{host}]' if ':' in host else host}:{settings.listen_port}"


def _serve(settings: Settings) -> int:
    if not settings.sandbox_image:
        print("CS_SANDBOX_IMAGE is required", file=sys.stderr)
        return 2
    from context_service.adapters import optional

    # before the port is bound (a refusal leaves no socket open) and the model loads
    optional.check(settings, settings.workers)
    try:
        listener = _listener(settings)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        print(f"context-service: cannot listen on {settings.listen_addr} (CS_LISTEN_ADDR): "
              f"{reason}", file=sys.stderr)
        return 2
    _share_the_interpreter()  # before the warmer's first loads and the projections' catch-up
    signals = StopSignals()
    container = None
    try:
        signals.install()  # before anything starts: from here on a stop signal is obeyed
        import uvicorn

        from context_service import bootstrap
        from context_service.adapters.embedding.wordllama_model import ModelUnavailable
        from context_service.http import connections
        from context_service.http.shutdown import Drain, Server

        try:
            bootstrap.check_model()
        except ModelUnavailable as exc:
            print(str(exc), file=sys.stderr)
            return 2
        signals.check()
        container = bootstrap.build(settings)
        signals.check()
        bootstrap.connect_cluster(container)
        bootstrap.adopt(container)
        container.start_workers(settings.workers)
        drain = Drain(bootstrap.app(container))
        config = uvicorn.Config(drain, host=settings.listen_host, port=settings.listen_port,
                                log_level="warning", access_log=False, timeout_keep_alive=5,
                                log_config=None,  # uvicorn's lines pass the log's redaction
                                proxy_headers=False,  # no trusted proxy in front
                                ws="none",  # no WebSocket route: its protocol is not imported
                                server_header=False,
                                # a head deadline, a head size bound and a bound on open
                                # connections, none of which uvicorn's own protocol has
                                http=connections.bounded(connections.connection_bound()))
        server = Server(config, drain, settings.shutdown_grace)
        _settle_heap()
        signals.check()
        where = (settings.database_url and "CS_DATABASE_URL") or str(settings.data_dir.resolve())
        log.info("context service listening", extra={
            "url": _url(settings),
            "namespace": settings.namespace, "data": where})
        print(f"Context Service on {_url(settings)}"
              f"  (data: {where})", flush=True)
        mode = "  (development mode: type the subject to act as)" \
            if settings.settings_dev_subject else ""
        print(f"Settings: {_url(settings)}/settings{mode}",
              flush=True)
        with signals.delivering_to(lambda sig: server.handle_exit(sig, None)):
            server.run(sockets=[listener])  # until SIGTERM or SIGINT, then drains
    except ShutdownRequested:
        pass  # a signal during start-up: stop what already runs
    finally:
        listener.close()
        with signals.stopping():
            if container is not None:
                container.close()
    return 0


def _worker(settings: Settings, name: str) -> int:
    """Run one worker as its own process; a PostgreSQL advisory lock keeps one active.
    SIGTERM and SIGINT stop it at a batch boundary, releasing the lock."""
    from context_service.adapters import optional

    optional.check(settings, (name,))
    signals = StopSignals()
    container = None
    try:
        signals.install()  # before anything starts: from here on a stop signal is obeyed
        from context_service import bootstrap

        container = bootstrap.build(settings)
        known = [*container.runners, "reconciler", "snapshots", "relay"]
        if name not in known:
            print(f"unknown worker {name!r}; known: {', '.join(known)}", file=sys.stderr)
            return 2
        if name in ("reconciler", "snapshots"):
            bootstrap.connect_cluster(container)
            if container.cluster is None:
                print(f"worker {name} needs Kubernetes (CS_KUBE is off)", file=sys.stderr)
                return 2
        signals.check()
        container.start_workers((name,))  # active only while holding its advisory lock
        _settle_heap()
        signals.wait()
    except ShutdownRequested:
        pass
    finally:
        with signals.stopping():
            if container is not None:
                container.close()
    return 0


def _adopt(settings: Settings) -> int:
    from context_service import bootstrap

    container = bootstrap.build(settings)
    try:
        bootstrap.connect_cluster(container)
        report = bootstrap.adopt(container)
    finally:
        container.close()
    if report is None:
        print("no Kubernetes cluster configured (CS_KUBE=off)", file=sys.stderr)
        return 2
    print(f"adopted {len(report.contexts)} context(s), {len(report.pools)} pool(s); "
          f"{len(report.skipped)} already known")
    for line in report.not_imported:
        print(f"not imported: {line}")
    return 0


def _migrate(settings: Settings) -> int:
    from context_service import bootstrap

    container = bootstrap.build(settings)
    container.close()
    print("migrations applied")
    return 0


def _status(settings: Settings) -> int:
    from context_service import bootstrap
    from context_service.domain.registry import EVENTS

    container = bootstrap.build(settings)
    try:
        head = container.store.head()
        print(f"{'projection':24} {'position':>10} {'lag':>10}")
        for name in container.view_names:
            position = container.tracking.max_tracking_id(name) or 0
            print(f"{name:24} {position:>10} {head - position:>10}")
        print(f"{'(log head)':24} {head:>10}")
        for runner in container.runners.values():
            for passed in runner.passed_over():
                known = passed.event in EVENTS
                print(f"{passed.projection} passed over {passed.events} events of type "
                      f"{passed.event} (positions {passed.first} to {passed.last}): "
                      + ("known to this version, rebuilt at its worker's next start" if known
                         else "unknown to this version"))
    finally:
        container.close()
    return 0


def _progress(*columns: Any) -> Progress:
    """A progress bar for the person at the terminal: on standard error, drawn only when that
    is a terminal, so that piped or redirected output holds the result lines alone."""
    from rich.console import Console
    from rich.progress import Progress

    from context_service.terminal import draws_bars

    err = Console(stderr=True)
    return Progress(*columns, console=err, disable=not draws_bars(err),
                    redirect_stdout=sys.stdout.isatty(), redirect_stderr=False)


def _rebuild(settings: Settings, names: Sequence[str]) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TimeRemainingColumn

    from context_service import bootstrap

    container = bootstrap.build(settings)
    try:
        unknown = [n for n in names if n not in container.view_names]
        if unknown:
            print(f"unknown projection(s): {', '.join(unknown)}; known: "
                  f"{', '.join(container.view_names)}", file=sys.stderr)
            return 2
        head = container.store.head()
        with _progress("[progress.description]{task.description}", BarColumn(),
                       MofNCompleteColumn(), TimeRemainingColumn()) as progress:
            for name in names or container.view_names:
                task = progress.add_task(name, total=max(head, 1))
                started = time.perf_counter()

                def advance(position: int, _head: int, task: TaskID = task) -> None:
                    progress.update(task, completed=position)

                runner = container.runner_for([name])
                count = runner.rebuild(advance)
                progress.update(task, completed=max(head, 1))
                elapsed = max(time.perf_counter() - started, 1e-9)
                line = f"{name}: {count} events in {elapsed:.2f}s ({count / elapsed:,.0f} events/s"
                records = getattr(runner.projections[0][0], "indexed", None)
                if isinstance(records, int):
                    line += f", {records} records, {records / elapsed:,.0f} records/s"
                print(line + ")", flush=True)
    finally:
        container.close()
    return 0


def _export(settings: Settings, namespace: str | None, output: Path) -> int:
    """The log into a new file beside ``output`` that replaces it once complete: an export that
    fails or is interrupted leaves no shorter file behind, whose chain would verify as intact."""
    from rich.progress import BarColumn, MofNCompleteColumn

    from context_service import bootstrap
    from context_service.adapters.eventstore.export import export
    from context_service.files import Replacing

    try:  # before the database: a file that cannot be written is known at once
        replacing = Replacing(output, binary=True)
    except OSError as exc:
        print(f"context-service: cannot write {output}: {exc.strerror}", file=sys.stderr)
        return 2
    with replacing as out:
        container = bootstrap.build(settings)
        try:
            with _progress("[progress.description]{task.description}", BarColumn(),
                           MofNCompleteColumn()) as progress:
                task = progress.add_task("export", total=max(container.store.head(), 1))

                def advance(position: int, head: int) -> None:
                    progress.update(task, completed=position, total=max(head, 1))

                count, last = export(container.store, out, namespace, advance)
        finally:
            container.close()
    # the last hash, kept apart from the file, shows a file cut between lines or added to
    print(f"exported {count} events to {output}, last hash {last}")
    return 0


def _verify(path: Path, last: str | None) -> int:
    from context_service.adapters.eventstore.export import verify_file

    try:
        checked, broken, why = verify_file(path, last)
    except OSError as exc:
        print(f"context-service: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 2
    if broken is not None:
        print(f"{path}: line {broken} is broken: {why}", file=sys.stderr)
        return 1
    ends = "" if last is None else ", ending with the export's last line"
    print(f"{path}: {checked} lines, hash chain intact{ends}")
    return 0


def _tail(settings: Settings, subject: str, durable: str, fmt: str, limit: int | None) -> int:
    from context_service.adapters.nats.tail import TailError, tail

    url = settings.nats_url or f"nats://{settings.nats_listen}"
    try:
        tail(url, subject, durable, sys.stdout, limit, fmt=fmt)
    except TailError as exc:
        print(f"context-service: {exc}", file=sys.stderr)
        return 1
    return 0


def _sha256(text: str) -> str:
    if len(text) != 64 or text.strip("0123456789abcdef"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a SHA-256 hash (64 lowercase hex)")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="context-service", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the API and, by default, every worker")
    sub.add_parser("migrate", help="apply database migrations")
    sub.add_parser("adopt", help="import labelled cluster objects the log does not know")
    worker = sub.add_parser("worker", help="run one worker (one active instance at a time)")
    worker.add_argument("name",
                        help="projections | query-index | reconciler | snapshots | relay")
    proj = sub.add_parser("projections", help="inspect or rebuild read models")
    psub = proj.add_subparsers(dest="action", required=True)
    psub.add_parser("status", help="each projection's position and lag behind the log head")
    rebuild = psub.add_parser("rebuild", help="drop and rebuild from position zero")
    rebuild.add_argument("names", nargs="*", help="projections to rebuild (default: all)")
    events = sub.add_parser("events", help="follow the published event stream")
    esub = events.add_subparsers(dest="action", required=True)
    tail = esub.add_parser("tail", help="a durable JetStream consumer printing events")
    tail.add_argument("--subject", default="context.events.>")
    tail.add_argument("--durable", default="context-service-tail")
    tail.add_argument("--format", dest="fmt", choices=("json", "text"), default="json")
    tail.add_argument("--limit", type=_positive, default=None, help="stop after this many events")
    history = sub.add_parser("history", help="export and verify the hash-chained event log")
    hsub = history.add_subparsers(dest="action", required=True)
    exp = hsub.add_parser("export", help="write the whole log as hash-chained JSON lines")
    exp.add_argument("--namespace", default=None)
    exp.add_argument("--output", required=True, type=Path)
    ver = hsub.add_parser("verify", help="check a file's hash chain; name the first broken line")
    ver.add_argument("file", type=Path)
    ver.add_argument("--last-hash", default=None, type=_sha256, help="the last hash export "
                     "printed: the file must end with that line (not cut between lines, nothing "
                     "added)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    logs.configure(settings.log_format)
    import psycopg
    import psycopg_pool
    from eventsourcing.persistence import OperationalError
    from psycopg.conninfo import conninfo_to_dict

    from context_service.adapters.optional import NotInstalledError
    from context_service.adapters.postgres.embedded import EmbeddedPostgresError
    from context_service.adapters.postgres.migrations import MigrationError

    for name, value in (("CS_DATABASE_URL", settings.database_url),
                        ("CS_AGENT_QUERY_URL", settings.agent_query_url)):
        if not value:
            continue
        try:
            conninfo_to_dict(value)
        except psycopg.ProgrammingError:  # its text may quote the string, password and all
            print(f"context-service: {name} is not a PostgreSQL connection string "
                  "(postgresql://user:password@host:5432/dbname, or key=value pairs)",
                  file=sys.stderr)
            return 2
    try:
        return _run(args, settings)
    except (MigrationError, EmbeddedPostgresError, NotInstalledError) as exc:
        print(f"context-service: {exc}", file=sys.stderr)
        return 2
    except (OperationalError, psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
        print(f"context-service: cannot reach the database (CS_DATABASE_URL): {exc}",
              file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.filename is None:  # not a path: nothing this line could name
            raise
        # the data directory (or a file in it) cannot be made, read or written
        print(f"context-service: cannot use {exc.filename}: {exc.strerror} (the data "
              f"directory, CS_DATA_DIR, is {settings.data_dir})", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("context-service: interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace, settings: Settings) -> int:
    if args.command == "serve":
        return _serve(settings)
    if args.command == "migrate":
        return _migrate(settings)
    if args.command == "adopt":
        return _adopt(settings)
    if args.command == "worker":
        return _worker(settings, args.name)
    if args.command == "events":
        return _tail(settings, args.subject, args.durable, args.fmt, args.limit)
    if args.command == "history":
        if args.action == "export":
            return _export(settings, args.namespace, args.output)
        return _verify(args.file, args.last_hash)
    if args.action == "status":
        return _status(settings)
    return _rebuild(settings, args.names)


if __name__ == "__main__":
    sys.exit(main())
