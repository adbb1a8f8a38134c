"""S3 synchronization (spec §7.3): a context's portable roots travel as one bundle, a gzipped
tar named by the revision it holds (``<prefix>/<revision>.tar.gz``), and ``<prefix>/current``
then names that revision. The bundle is written first, so a reader that follows ``current``
always finds a whole bundle; a bundle already there under its revision is not sent again (the
name addresses the content). The bundle is reproducible: entries by path, no owners, no times.
Only object permissions are needed (s3:PutObject to push, s3:GetObject to pull): a 403 on a
read tells nothing of the key (S3 answers a missing key so to a caller that may not list the
bucket), so a push then writes the bundle and ``current`` as if they were not there.

A pull (``fetch``) downloads the bundle named by the revision the service calls current, never
the one ``current`` names: the service is the authority, ``current`` only a convenience for
readers without it. A transfer cut midway is resumed with a ranged GET of the same object, and
an object larger than any bundle of the revision's declared totals is refused unread.

The endpoint is ``CS_S3_ENDPOINT`` (empty: AWS), the region ``CS_S3_REGION`` or ``AWS_REGION``
(default ``us-east-1``); credentials come from the usual AWS sources (environment, profile).
boto3 is an optional dependency: ``pip install 'context-service[s3]'``."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from context_service.contextctl.client import CommandError
from context_service.contextctl.ingestion.revision import FileEntry, digest
from context_service.contextctl.local.content import portable_files, relative_name

SCHEME = "s3://"
DEFAULT_REGION = "us-east-1"
CURRENT = "current"
NOT_FOUND = ("404", "NoSuchKey", "NotFound")  # the error codes of a key that is not there
CHUNK = 1 << 20  # a download is written as it arrives, a MiB at a time
ATTEMPTS = 5  # transfers of a bundle cut midway before a pull gives up
BACKOFF = 0.25  # seconds before the first resume of a cut transfer, doubled before each next


@dataclass(frozen=True, slots=True)
class Location:
    bucket: str
    prefix: str  # without a trailing "/"; may be empty

    @classmethod
    def parse(cls, url: str) -> Location:
        bucket, _, prefix = url[len(SCHEME):].partition("/")
        if not url.startswith(SCHEME) or not bucket:
            raise CommandError(f"{url!r} is not s3://BUCKET/PREFIX")
        return cls(bucket, prefix.strip("/"))

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"


def is_s3(destination: str) -> bool:
    return destination.startswith(SCHEME)


@contextmanager
def bundle(root: Path, context_type: str, revision: str) -> Iterator[Path]:
    """The files of the portable roots under ``root`` (spec 4.2: the files a revision id
    addresses, by path) as a reproducible ``.tar.gz`` in a temporary file. What it holds is
    addressed as it is written and must be ``revision``: a bundle is named by its revision, so
    a file written meanwhile must not go out under that name."""
    handle, name = tempfile.mkstemp(prefix="context-bundle-", suffix=".tar.gz")
    os.close(handle)
    try:
        entries = []
        with open(name, "wb") as raw, gzip.GzipFile(
                filename="", fileobj=raw, mode="wb", mtime=0) as packed, \
                tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(portable_files(root), key=lambda p: relative_name(
                    root, p).encode()):
                entries.append(_add(tar, path, relative_name(root, path), revision))
        if digest(context_type, {}, entries) != revision:
            raise _changed(revision)
        yield Path(name)
    finally:
        os.unlink(name)


def _add(tar: tarfile.TarFile, path: Path, name: str, revision: str) -> FileEntry:
    """One file, with no owner, time or mode of its own; its entry as the bundle holds it."""
    info = tar.gettarinfo(str(path), name)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    info.mode = 0o644
    with path.open("rb") as data:
        hashing = _Hashing(data)
        try:
            tar.addfile(info, hashing)
        except OSError as exc:  # the file shrank after its size was read
            raise _changed(revision) from exc
    return FileEntry(name, hashing.hasher.hexdigest(), hashing.size)


def _changed(revision: str) -> CommandError:
    return CommandError(f"the files changed while the bundle was made (they are no longer "
                        f"revision {revision[:12]}): push again")


class _Hashing:
    """A reader that hashes what is read through it."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.hasher = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.hasher.update(data)
        self.size += len(data)
        return data


def check(destination: str) -> None:
    """For an ``s3://`` destination: its form, and boto3 present; checked before anything is
    asked of the service or written."""
    if is_s3(destination):
        Location.parse(destination)
        _boto3()


def _boto3() -> Any:
    try:
        import boto3  # an optional dependency: only S3 synchronization needs it
    except ImportError as exc:
        raise CommandError("S3 synchronization needs boto3: pip install "
                           "'context-service[s3]'") from exc
    return boto3


def client(environ: Mapping[str, str] = os.environ) -> Any:
    boto3 = _boto3()
    from botocore.config import Config

    region = environ.get("CS_S3_REGION") or environ.get("AWS_REGION") or DEFAULT_REGION
    # a session of its own: boto3's default one keeps the first credentials it found, and a
    # process that synchronizes twice (a test run, a tool calling contextctl) would sign with them
    session = boto3.session.Session()
    return session.client("s3", endpoint_url=environ.get("CS_S3_ENDPOINT") or None,
                          region_name=region, config=Config(
                              connect_timeout=10, read_timeout=30,  # as contextctl's HTTP timeout
                              retries={"mode": "standard", "max_attempts": 3}))


def _status(exc: Any) -> int:
    return int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)


def _missing(exc: Any) -> bool:
    return exc.response.get("Error", {}).get("Code") in NOT_FOUND


def _sent_already(s3: Any, location: Location, key: str) -> bool:
    """Whether the object is known to be there. A 403 tells nothing: S3 answers a read of a
    missing key so when the caller may not list the bucket (a policy granting s3:GetObject and
    s3:PutObject on a prefix), and a writer may not read at all (s3:PutObject alone); the key
    names its content, so sending it again is harmless."""
    from botocore.exceptions import ClientError

    try:
        s3.head_object(Bucket=location.bucket, Key=key)
    except ClientError as exc:
        if _missing(exc) or _status(exc) == 403:
            return False
        raise
    return True


def _current(s3: Any, location: Location) -> str | None:
    """The revision ``current`` names: "" when there is none yet, None when it may not be read
    (a 403, as for the bundle: then it is written whatever it names)."""
    from botocore.exceptions import ClientError

    try:
        body = s3.get_object(Bucket=location.bucket, Key=location.key(CURRENT))["Body"].read()
    except ClientError as exc:
        if _missing(exc):
            return ""
        if _status(exc) == 403:
            return None
        raise
    return bytes(body).decode(errors="replace")


def push(location: Location, root: Path, context_type: str, revision: str,
         progress: Callable[[int | None], Callable[[int], None]],
         environ: Mapping[str, str] = os.environ) -> bool:
    """Sends the bundle of ``revision`` unless it is there already, then points ``current`` at
    it; whether a bundle was sent. Any S3 failure is a ``CommandError`` naming the location."""
    from boto3.exceptions import Boto3Error  # upload_file's own errors (S3UploadFailedError)
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = client(environ)
    key = location.key(f"{revision}.tar.gz")
    try:
        sent = not _sent_already(s3, location, key)
        if sent:
            with bundle(root, context_type, revision) as path:
                advance = progress(path.stat().st_size)
                s3.upload_file(str(path), location.bucket, key, Callback=advance,
                               ExtraArgs={"ContentType": "application/gzip",
                                          "Metadata": {"revision": revision}})
        if _current(s3, location) != revision:  # unchanged files write nothing, if readable
            s3.put_object(Bucket=location.bucket, Key=location.key(CURRENT),
                          Body=io.BytesIO(revision.encode()), ContentType="text/plain")
    except (Boto3Error, BotoCoreError, ClientError) as exc:
        raise CommandError(f"S3 synchronization to {location} failed: {exc}") from exc
    return sent


TAR_BLOCK = 512  # tar writes headers and data in blocks
TAR_RECORD = 20 * TAR_BLOCK  # and pads the archive to whole records (tarfile.RECORDSIZE)
# The records of a file's PAX extended header: its path ("NNNN path=NAME\n", 4,106 bytes for
# the longest name, 4,095 bytes: Linux's PATH_MAX less its NUL, as no longer path can be opened
# to be bundled), its size from 8 GiB ("NN size=N\n", at most 28) and hdrcharset=BINARY for a
# name that is not UTF-8 (21).
PAX_RECORDS = 4106 + 28 + 21
GZIP_FRAME = 10 + 8  # a gzip header without a file name (the bundle's) and its trailer


def largest_bundle(files: int, size: int) -> int:
    """The size no bundle of ``files`` files and ``size`` bytes can exceed, from the formats.
    The tar (PAX format, files only, no directories): each file a header block, its data in
    whole blocks (at most 511 bytes of padding), and a PAX extended header (a header block and
    its records in whole blocks) when its name is longer than 100 bytes or not ASCII; then two
    zero blocks, the whole padded to records. The gzip: its frame around the deflated tar,
    which CPython's zlib (raw deflate, window 15 bits, memory level 8) keeps within
    ``deflateBound`` for those parameters: a stored block's 5 bytes for each 16 KiB, at
    worst, and 7 more."""
    pax = TAR_BLOCK + _whole_blocks(PAX_RECORDS)
    tar = size + files * (TAR_BLOCK - 1 + TAR_BLOCK + pax) + 2 * TAR_BLOCK
    tar = -(-tar // TAR_RECORD) * TAR_RECORD
    return GZIP_FRAME + tar + (tar >> 12) + (tar >> 14) + (tar >> 25) + 7


def _whole_blocks(size: int) -> int:
    return -(-size // TAR_BLOCK) * TAR_BLOCK


def fetch(location: Location, revision: str, target: Path,
          progress: Callable[[int | None], Callable[[int], None]],
          environ: Mapping[str, str] = os.environ, largest: int | None = None) -> None:
    """Downloads the bundle of ``revision`` (the one named by it, whatever ``current`` says:
    the service decides which revision is pulled) to ``target``: a transfer cut midway is
    resumed where it stopped, and an object of more than ``largest`` bytes (``largest_bundle``
    of the revision's declared totals; None when it declares none, as a clone's entry) is
    refused before it fills the disk. Any S3 failure is a ``CommandError`` naming the
    location; nothing is left at ``target`` after a failure."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    download = _Download(client(environ), location, revision, largest)
    try:
        with target.open("wb") as out:
            download.into(out, progress)
    except (Boto3Error, BotoCoreError, ClientError) as exc:
        target.unlink(missing_ok=True)
        raise CommandError(f"S3 synchronization from {location} failed: {exc}") from exc
    except BaseException:
        target.unlink(missing_ok=True)  # no part of a bundle refused or cut is left behind
        raise


class _Download:
    """One bundle's bytes, received over as many GETs as the link needs. A transfer cut midway
    (a dropped connection, a read timeout) is resumed with a GET of the rest (``Range``) of the
    same object (``If-Match`` the ETag of the first answer): a bundle replaced meanwhile is
    never spliced; S3 answers 412, and the new one is received again from byte 0, once. A
    GET of the whole object again is what a server that ignores ``Range`` answers (a 200),
    and it too is received from byte 0. ATTEMPTS cut transfers at most, BACKOFF apart and
    doubling."""

    def __init__(self, s3: Any, location: Location, revision: str,
                 largest: int | None) -> None:
        self.s3, self.location, self.revision, self.largest = s3, location, revision, largest
        self.key = location.key(f"{revision}.tar.gz")
        self.url = f"{SCHEME}{location.bucket}/{self.key}"
        self.etag: str | None = None
        self.size: int | None = None  # the object's, when the server says
        self.received = 0
        self.restarted = False

    def into(self, out: BinaryIO, progress: Callable[[int | None], Callable[[int], None]]
             ) -> None:
        got: dict[str, Any] | None = self._whole(_bundle_object(self.s3, self.location,
                                                                self.revision))
        advance = progress(self.size)
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._receive(got or self._rest(out, advance), out, advance)
                return
            except _cut_transfer() as exc:
                if attempt == ATTEMPTS:
                    raise self._given_up(exc) from exc
                got = None
                time.sleep(BACKOFF * 2 ** (attempt - 1))

    def _given_up(self, exc: Exception) -> CommandError:
        size = "?" if self.size is None else self.size
        return CommandError(f"S3 synchronization from {self.location} failed: the transfer was "
                            f"cut {ATTEMPTS} times, {self.received} of {size} bytes of "
                            f"{self.url} arrived ({exc}): pull again")

    def _whole(self, got: dict[str, Any]) -> dict[str, Any]:
        """The answer to a GET of the whole object, checked against the bound before its body
        is read: the object it is, and its size."""
        self.etag, self.size = got.get("ETag"), got.get("ContentLength")
        if self.largest is not None and self.size is not None and self.size > self.largest:
            got["Body"].close()
            raise CommandError(
                f"{self.url} is {self.size} bytes, more than any bundle of the files and bytes "
                f"its revision declares can be ({self.largest} at most): refused, nothing was "
                "pulled")
        return got

    def _rest(self, out: BinaryIO, advance: Callable[[int], None]) -> dict[str, Any]:
        """The answer to a GET of what has not arrived yet, of the object that sent the rest."""
        from botocore.exceptions import ClientError

        if self.etag is None:  # nothing can tell that the rest is of the same object
            return self._again(out, advance)
        try:
            got = dict(self.s3.get_object(Bucket=self.location.bucket, Key=self.key,
                                          Range=f"bytes={self.received}-", IfMatch=self.etag))
        except ClientError as exc:
            if _status(exc) != 412:
                raise
            if self.restarted:
                raise CommandError(f"{self.url} changed while it was downloaded, and again "
                                   "after it was downloaded anew: pull again once it is "
                                   "written") from exc
            self.restarted = True
            return self._again(out, advance)
        if str(got.get("ContentRange") or "").startswith(f"bytes {self.received}-"):
            return got
        got["Body"].close()
        return self._again(out, advance)

    def _again(self, out: BinaryIO, advance: Callable[[int], None]) -> dict[str, Any]:
        """The object received again from byte 0, its progress too."""
        out.seek(0)
        out.truncate()
        advance(-self.received)
        self.received = 0
        return self._whole(_bundle_object(self.s3, self.location, self.revision))

    def _receive(self, got: dict[str, Any], out: BinaryIO, advance: Callable[[int], None]
                 ) -> None:
        with closing(got["Body"]) as body:
            for chunk in body.iter_chunks(CHUNK):
                if self.largest is not None and self.received + len(chunk) > self.largest:
                    raise CommandError(  # a server that sends no length says so only here
                        f"{self.url} holds more than {self.largest} bytes, more than any bundle "
                        "of the files and bytes its revision declares can be: refused, nothing "
                        "was pulled")
                out.write(chunk)
                self.received += len(chunk)
                advance(len(chunk))


def _cut_transfer() -> tuple[type[Exception], ...]:
    """What a transfer cut midway raises: botocore's ResponseStreamingError (urllib3's
    ProtocolError: a connection dropped), ReadTimeoutError and ConnectionClosedError (all
    HTTPClientError), IncompleteReadError (fewer bytes than the length, the connection closed
    cleanly), a ConnectionError where the resume cannot connect (after botocore's own
    retries); and any other urllib3 error a body's read lets through (an SSLError)."""
    from botocore.exceptions import ConnectionError as Unreachable
    from botocore.exceptions import HTTPClientError, IncompleteReadError
    from urllib3.exceptions import HTTPError

    return (HTTPClientError, IncompleteReadError, Unreachable, HTTPError)


def _bundle_object(s3: Any, location: Location, revision: str) -> dict[str, Any]:
    """The GET response of the bundle of ``revision``, its body still to read. One GET and no
    HEAD: a reader is granted s3:GetObject, which moto, the tests' server, does not take for a
    HEAD. A 403 is named for both things it may mean: S3 answers a missing key so to a caller
    that may not list the bucket."""
    from botocore.exceptions import ClientError

    key = location.key(f"{revision}.tar.gz")
    try:
        return dict(s3.get_object(Bucket=location.bucket, Key=key))
    except ClientError as exc:
        if _missing(exc):
            raise CommandError(f"{location} holds no bundle of revision {revision}: push it "
                               "there first") from exc
        if _status(exc) == 403:
            raise CommandError(
                f"{SCHEME}{location.bucket}/{key} is not found or not readable with these "
                f"credentials (S3 answered 403 {_code(exc)}; without s3:ListBucket it answers "
                "a missing key so): push the revision there first, or pull with credentials "
                "granted s3:GetObject on it") from exc
        raise


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code") or "")
