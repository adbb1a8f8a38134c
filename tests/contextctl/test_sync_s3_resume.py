"""``ctx sync pull --from s3://…`` over a link that drops and from a bucket that is not trusted:
a download cut midway resumes with a ranged GET of the same object (``If-Match`` its first
ETag, so a bundle replaced meanwhile is never spliced), and an object larger than any bundle of
the revision's declared files and bytes is refused before it fills the disk. Against moto's
S3 server process, with a loopback proxy of this module between contextctl and it that cuts
the responses it is told to, after so many bytes of their body."""

from __future__ import annotations

import gzip
import http.client
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from context_service.contextctl import s3
from context_service.contextctl.client import CommandError
from tests.contextctl.conftest import Cli
from tests.contextctl.s3_server import BUCKET, CREDENTIALS, bucket, endpoint
from tests.contextctl.test_sync_pull import everything, files_of
from tests.contextctl.test_sync_push import revision_of

NS = ("-n", "ctl-sync-s3-resume")
__all__ = ["bucket", "endpoint"]  # the S3 server fixtures, shared
MIB = 1 << 20
SIZE = 3 * MIB  # a bundle of several reads (s3.CHUNK), so that a cut falls inside it
CUT = MIB + MIB // 2  # the bytes of a body sent before its connection is cut


@dataclass(frozen=True)
class Seen:
    """A request the proxy forwarded, and the status the server answered."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    status: int

    @property
    def bundle(self) -> bool:
        return self.method == "GET" and self.path.split("?")[0].endswith(".tar.gz")


@dataclass
class Proxy:
    """HTTP between contextctl and the S3 server, one request at a time on each connection.
    The successful answers to GETs of a bundle are cut in turn after ``cuts[0]``, ``cuts[1]``…
    bytes of their body (then ``on_cut`` runs, before the client sees the cut), and sent with
    no length (chunked) when ``unframed``; the server never sees a ``Range`` when
    ``ignores_ranges`` (it answers with the whole object, as some do); answers carry no
    ``ETag`` when ``without_etags``."""

    upstream: tuple[str, int]
    cuts: list[int] = field(default_factory=list)
    on_cut: Callable[[], None] = lambda: None
    unframed: bool = False
    ignores_ranges: bool = False
    without_etags: bool = False
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def bundle_gets(self) -> list[Seen]:
        return [s for s in self.seen if s.bundle]

    def close(self) -> None:
        self.listener.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self._answer_each(conn)
        except (ConnectionResetError, BrokenPipeError):  # a client that stopped reading
            return

    def _answer_each(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as incoming:
            while (head := _head(incoming)):
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {name.strip().lower(): value.strip() for name, value in (
                    line.split(":", 1) for line in lines[1:] if line)}
                if self.ignores_ranges:
                    head = b"".join(line for line in head.splitlines(keepends=True)
                                    if not line.lower().startswith(b"range:"))
                request = head + incoming.read(int(headers.get("content-length") or 0))
                status, reason, answer_headers, body = self._forward(request, method)
                if self.without_etags:
                    answer_headers = [(n, v) for n, v in answer_headers if n.lower() != "etag"]
                seen = Seen(method, path, headers, status)
                self.seen.append(seen)
                framed = not (self.unframed and seen.bundle and status in (200, 206))
                answer = _answer(status, reason, answer_headers, body, framed)
                if seen.bundle and status in (200, 206) and self.cuts:
                    cut = self.cuts.pop(0)
                    conn.sendall(answer[:answer.index(b"\r\n\r\n") + 4 + cut])
                    self.on_cut()
                    return
                conn.sendall(answer)

    def _forward(self, request: bytes, method: str) -> tuple[int, str, list[tuple[str, str]],
                                                             bytes]:
        with socket.create_connection(self.upstream) as up:
            up.sendall(request)
            response = http.client.HTTPResponse(up, method=method)
            response.begin()
            return response.status, response.reason, response.getheaders(), response.read()


def _head(stream: BinaryIO) -> bytes:
    """A request's line and headers with the blank line ending them; b"" at the end."""
    lines = []
    while (line := stream.readline()) not in (b"", b"\r\n"):
        lines.append(line)
    return b"".join(lines) + b"\r\n" if lines else b""


def _answer(status: int, reason: str, headers: list[tuple[str, str]], body: bytes,
            framed: bool) -> bytes:
    kept = [(n, v) for n, v in headers
            if n.lower() not in ("content-length", "transfer-encoding", "connection")]
    if framed:
        kept.append(("Content-Length", str(len(body))))
    else:
        kept.append(("Transfer-Encoding", "chunked"))
        step = 64 * 1024
        body = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + step]), body[i:i + step])
                        for i in range(0, len(body), step)) + b"0\r\n\r\n"
    head = f"HTTP/1.1 {status} {reason}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in kept)
    return head.encode("latin-1") + b"\r\n" + body


@pytest.fixture
def proxy(endpoint: str) -> Iterator[Proxy]:
    host, port = endpoint.removeprefix("http://").split(":")
    started = Proxy((host, int(port)))
    yield started
    started.close()


@dataclass
class Progress:
    """What a download reported: the totals it announced and each advance."""

    totals: list[int | None] = field(default_factory=list)
    advances: list[int] = field(default_factory=list)

    def __call__(self, total: int | None) -> Callable[[int], None]:
        self.totals.append(total)
        return self.advances.append


def fetch(proxy: Proxy, revision: str, target: Path, progress: Progress,
          largest: int | None = None) -> None:
    bounded = {} if largest is None else {"largest": largest}
    s3.fetch(s3.Location.parse("s3://contexts/f"), revision, target, progress,
             {**CREDENTIALS, "CS_S3_ENDPOINT": proxy.url}, **bounded)


def put(client: Any, revision: str, body: bytes, prefix: str = "f") -> str:
    """``body`` as the bundle of ``revision``; its ETag."""
    client.put_object(Bucket=BUCKET, Key=f"{prefix}/{revision}.tar.gz", Body=body)
    return str(client.head_object(Bucket=BUCKET, Key=f"{prefix}/{revision}.tar.gz")["ETag"])


def replacing(client: Any, prefix: str, revision: str,
              bodies: Iterator[bytes]) -> Callable[[], None]:
    """An ``on_cut`` putting the next of ``bodies`` as the bundle of ``revision``."""
    def replace() -> None:
        put(client, revision, next(bodies), prefix)
    return replace


def pull(cli: Cli, home: Path, name: str, url: str, via: str) -> Any:
    return cli("ctx", "sync", "pull", name, "--from", url, "--no-progress", "--json", *NS,
               CS_CONTEXT_HOME=str(home), CS_S3_ENDPOINT=via)


def published(cli: Cli, home: Path, name: str, url: str, endpoint: str,
              sizes: tuple[int, ...] = (SIZE,)) -> tuple[Path, str]:
    """A local artifacts context of incompressible files (a bundle as large as its files),
    created on the service and pushed to ``url``; its root and revision."""
    assert cli("local", "init", name, "--type", "artifacts", CS_CONTEXT_HOME=str(home)).code == 0
    root = home / name
    for n, size in enumerate(sizes):
        # names the ustar header cannot hold: each file needs a PAX header too
        (root / "artifacts" / f"données-{n}-{'x' * 120}.bin").write_bytes(os.urandom(size))
    assert cli("ctx", "create", name, "--type", "artifacts", *NS).code == 0
    pushed = cli("ctx", "sync", "push", name, "--to", url, "--no-progress", "--json", *NS,
                 CS_CONTEXT_HOME=str(home), CS_S3_ENDPOINT=endpoint)
    assert pushed.code == 0, pushed.err
    return root, str(json.loads(pushed.out)["revision"])


def recompressed(body: bytes) -> bytes:
    """The same tar gzipped otherwise: another object of the same files."""
    return gzip.compress(gzip.decompress(body), compresslevel=1, mtime=1)


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_pull_cut_midway_resumes_with_a_ranged_get_of_the_same_object(
        cli: Cli, bucket: Any, endpoint: str, proxy: Proxy, tmp_path: Path) -> None:
    url = "s3://contexts/resumed"
    root, revision = published(cli, tmp_path / "a", "resumed", url, endpoint)
    etag = bucket.head_object(Bucket=BUCKET, Key=f"resumed/{revision}.tar.gz")["ETag"]
    proxy.cuts = [CUT]
    home = tmp_path / "b"

    pulled = pull(cli, home, "resumed", url, proxy.url)
    assert pulled.code == 0, pulled.err
    assert json.loads(pulled.out)["revision"] == revision
    assert files_of(home / "resumed") == files_of(root)
    assert revision_of(home / "resumed", "artifacts") == revision
    first, resumed = proxy.bundle_gets()
    assert "range" not in first.headers and first.status == 200
    assert (resumed.headers.get("range"), resumed.headers.get("if-match"), resumed.status) == (
        f"bytes={CUT}-", etag, 206)
    assert [p.name for p in home.iterdir()] == ["resumed"]  # no staging left behind


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_bundle_replaced_between_the_cut_and_the_resume_is_received_again_whole(
        cli: Cli, bucket: Any, endpoint: str, proxy: Proxy, tmp_path: Path) -> None:
    """If-Match refuses the ranged GET (412): the rest of another object is never appended to
    the first one's bytes; the bundle is received again from byte 0."""
    url = "s3://contexts/replaced"
    root, revision = published(cli, tmp_path / "a", "replaced", url, endpoint)
    key = f"replaced/{revision}.tar.gz"
    body = bucket.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    etag = bucket.head_object(Bucket=BUCKET, Key=key)["ETag"]
    proxy.cuts = [CUT]
    proxy.on_cut = replacing(bucket, "replaced", revision, iter([recompressed(body)]))
    home = tmp_path / "b"

    pulled = pull(cli, home, "replaced", url, proxy.url)
    assert pulled.code == 0, pulled.err
    assert files_of(home / "replaced") == files_of(root)
    _, refused, again = proxy.bundle_gets()
    assert (refused.headers.get("range"), refused.headers.get("if-match"), refused.status) == (
        f"bytes={CUT}-", etag, 412)
    assert (again.headers.get("range"), again.status) == (None, 200)


def test_a_download_resumed_reports_progress_from_where_it_was(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    data = os.urandom(SIZE)
    put(bucket, "r1", data)
    proxy.cuts = [CUT]
    progress, target = Progress(), tmp_path / "bundle.tar.gz"

    fetch(proxy, "r1", target, progress)
    assert target.read_bytes() == data
    assert progress.totals == [SIZE]  # one bar, of the whole object
    assert sum(progress.advances) == SIZE and min(progress.advances) > 0
    assert [s.headers.get("range") for s in proxy.bundle_gets()] == [None, f"bytes={CUT}-"]


def test_a_bundle_replaced_before_the_resume_is_received_whole_and_so_counted(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    first, replacement = os.urandom(SIZE), os.urandom(MIB)  # shorter than what arrived
    put(bucket, "r7", first)
    proxy.cuts = [CUT]
    proxy.on_cut = replacing(bucket, "f", "r7", iter([replacement]))
    progress, target = Progress(), tmp_path / "bundle.tar.gz"

    fetch(proxy, "r7", target, progress)
    assert target.read_bytes() == replacement  # not the first CUT bytes of the other one
    assert [s.status for s in proxy.bundle_gets()] == [200, 412, 200]
    assert -CUT in progress.advances  # the bar went back to 0
    assert sum(progress.advances) == len(replacement)


def test_a_server_that_ignores_ranges_sends_the_whole_object_again(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    data = os.urandom(SIZE)
    put(bucket, "r8", data)
    proxy.cuts, proxy.ignores_ranges = [CUT], True
    progress, target = Progress(), tmp_path / "bundle.tar.gz"

    fetch(proxy, "r8", target, progress)
    assert target.read_bytes() == data  # not the first CUT bytes twice
    assert sum(progress.advances) == SIZE
    gets = proxy.bundle_gets()
    assert [(s.headers.get("range"), s.status) for s in gets] == [
        (None, 200), (f"bytes={CUT}-", 200), (None, 200)]


@pytest.mark.slow  # the backoff between its five attempts: 3.75 s
def test_an_object_without_an_etag_is_received_again_whole_after_a_cut(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    """Without an ETag nothing can tell that a ranged GET's bytes are of the object whose start
    arrived (a bundle replaced meanwhile would be spliced): the whole object is asked again,
    from byte 0, and the bar goes back with it."""
    data = os.urandom(SIZE)
    put(bucket, "r9", data)
    proxy.cuts, proxy.without_etags = [CUT], True
    progress, target = Progress(), tmp_path / "bundle.tar.gz"

    fetch(proxy, "r9", target, progress)
    assert target.read_bytes() == data
    assert [(s.headers.get("range"), s.headers.get("if-match"), s.status)
            for s in proxy.bundle_gets()] == [(None, None, 200), (None, None, 200)]
    assert -CUT in progress.advances and sum(progress.advances) == SIZE


def test_a_link_that_keeps_dropping_gives_up_naming_the_location_and_the_bytes(
        bucket: Any, proxy: Proxy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    put(bucket, "r2", os.urandom(SIZE))
    proxy.cuts = [100_000] * 10
    target = tmp_path / "bundle.tar.gz"
    waits: list[float] = []  # the backoff between attempts, asked for, not slept here
    monkeypatch.setattr(s3.time, "sleep", waits.append)

    with pytest.raises(CommandError) as failed:
        fetch(proxy, "r2", target, Progress())
    message = str(failed.value)
    assert message.startswith("S3 synchronization from s3://contexts/f failed")
    assert f"{5 * 100_000} of {SIZE} bytes" in message
    assert [s.headers.get("range") for s in proxy.bundle_gets()] == [
        None, *(f"bytes={n * 100_000}-" for n in range(1, 5))]
    assert not target.exists()  # no partial bundle left behind
    assert waits == [0.25, 0.5, 1.0, 2.0]  # doubling between the five attempts


def test_a_bundle_replaced_at_each_resume_fails_clearly(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    bodies = iter([os.urandom(SIZE) for _ in range(3)])
    put(bucket, "r3", next(bodies))
    proxy.cuts = [CUT, CUT]
    proxy.on_cut = replacing(bucket, "f", "r3", bodies)
    target = tmp_path / "bundle.tar.gz"

    with pytest.raises(CommandError) as failed:
        fetch(proxy, "r3", target, Progress())
    assert "s3://contexts/f/r3.tar.gz changed while it was downloaded, and again" in str(
        failed.value)
    assert [s.status for s in proxy.bundle_gets()] == [200, 412, 200, 412]
    assert not target.exists()


def test_a_real_bundle_is_within_the_bound_and_close_to_it(tmp_path: Path) -> None:
    """The bound is no looser than it must be: an incompressible bundle of long names comes
    within a few blocks a file (and a tar record) of it."""
    root = tmp_path / "ctx"
    (root / "artifacts").mkdir(parents=True)
    sizes = [SIZE, 1, 511, 513, 0]
    for n, size in enumerate(sizes):
        named = root / "artifacts" / ("y" * 200) / f"données-{n}-{'z' * 200}.bin"
        named.parent.mkdir(exist_ok=True)
        named.write_bytes(os.urandom(size))
    revision = revision_of(root, "artifacts")
    with s3.bundle(root, "artifacts", revision) as made:
        size = made.stat().st_size
    largest = s3.largest_bundle(len(sizes), sum(sizes))
    assert size <= largest < size + len(sizes) * 11 * 512 + 10240


def test_an_object_larger_than_the_bound_is_refused_before_it_is_read(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    largest = s3.largest_bundle(3, 1000)
    put(bucket, "r4", os.urandom(largest))
    put(bucket, "r5", os.urandom(largest + 1))
    fits, progress = tmp_path / "fits.tar.gz", Progress()
    fetch(proxy, "r4", fits, progress, largest)
    assert fits.stat().st_size == largest  # the bound itself is let through

    target, progress = tmp_path / "bundle.tar.gz", Progress()
    with pytest.raises(CommandError) as refused:
        fetch(proxy, "r5", target, progress, largest)
    assert str(refused.value) == (
        f"s3://contexts/f/r5.tar.gz is {largest + 1} bytes, more than any bundle of the files "
        f"and bytes its revision declares can be ({largest} at most): refused, nothing was "
        "pulled")
    assert progress.advances == [] and not target.exists()


def test_an_object_sent_without_a_length_is_cut_off_at_the_bound(
        bucket: Any, proxy: Proxy, tmp_path: Path) -> None:
    largest = s3.largest_bundle(1, MIB)
    put(bucket, "r6", os.urandom(SIZE))
    proxy.unframed = True
    target, progress = tmp_path / "bundle.tar.gz", Progress()

    with pytest.raises(CommandError) as refused:
        fetch(proxy, "r6", target, progress, largest)
    assert str(refused.value) == (
        f"s3://contexts/f/r6.tar.gz holds more than {largest} bytes, more than any bundle of "
        "the files and bytes its revision declares can be: refused, nothing was pulled")
    assert progress.totals == [None] and sum(progress.advances) <= largest
    assert not target.exists()


@pytest.mark.e2e
@pytest.mark.postgres
def test_a_pull_refuses_an_object_over_the_bound_of_the_declared_totals(
        cli: Cli, bucket: Any, endpoint: str, tmp_path: Path) -> None:
    """The totals come from the service's entry for the revision; an honest bundle padded with
    zeros (which gzip readers skip) up to one byte over the bound is refused, and the same
    padded to the bound itself is pulled."""
    url = "s3://contexts/bounded"
    sizes = (MIB, 4096)
    root, revision = published(cli, tmp_path / "a", "bounded", url, endpoint, sizes)
    key = f"bounded/{revision}.tar.gz"
    body = bucket.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    largest = s3.largest_bundle(len(sizes), sum(sizes))
    bucket.put_object(Bucket=BUCKET, Key=key, Body=body + bytes(largest + 1 - len(body)))
    home = tmp_path / "b"

    refused = pull(cli, home, "bounded", url, endpoint)
    assert refused.code == 1
    assert f"{url}/{revision}.tar.gz is {largest + 1} bytes" in refused.err
    assert everything(home) == {}

    bucket.put_object(Bucket=BUCKET, Key=key, Body=body + bytes(largest - len(body)))
    pulled = pull(cli, home, "bounded", url, endpoint)
    assert pulled.code == 0, pulled.err
    assert files_of(home / "bounded") == files_of(root)
