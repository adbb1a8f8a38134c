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
readers without it.

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


def fetch(location: Location, revision: str, target: Path,
          progress: Callable[[int | None], Callable[[int], None]],
          environ: Mapping[str, str] = os.environ) -> None:
    """Downloads the bundle of ``revision`` (the one named by it, whatever ``current`` says:
    the service decides which revision is pulled) to ``target``. Any S3 failure is a
    ``CommandError`` naming the location."""
    from boto3.exceptions import Boto3Error
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = client(environ)
    try:
        got = _bundle_object(s3, location, revision)
        advance = progress(got.get("ContentLength"))
        with closing(got["Body"]) as body, target.open("wb") as out:
            for chunk in body.iter_chunks(CHUNK):
                out.write(chunk)
                advance(len(chunk))
    except (Boto3Error, BotoCoreError, ClientError) as exc:
        raise CommandError(f"S3 synchronization from {location} failed: {exc}") from exc


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
