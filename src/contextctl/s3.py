"""S3 synchronization (spec §7.3): a context's portable roots travel as one bundle, a gzipped
tar named by the revision it holds (``<prefix>/<revision>.tar.gz``), and ``<prefix>/current``
then names that revision. The bundle is written first, so a reader that follows ``current``
always finds a whole bundle; a bundle already there under its revision is not sent again (the
name addresses the content). The bundle is reproducible: entries by path, no owners, no times.

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
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from context_service.contextctl.client import CommandError
from context_service.contextctl.ingestion.revision import FileEntry, digest
from context_service.contextctl.local.content import portable_files, relative_name

SCHEME = "s3://"
DEFAULT_REGION = "us-east-1"
CURRENT = "current"


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
    return boto3.client("s3", endpoint_url=environ.get("CS_S3_ENDPOINT") or None,
                        region_name=region, config=Config(
                            connect_timeout=10, read_timeout=30,  # as contextctl's HTTP timeout
                            retries={"mode": "standard", "max_attempts": 3}))


def _exists(s3: Any, location: Location, key: str) -> bool:
    return _head(s3, location, key) is not None


def _head(s3: Any, location: Location, key: str) -> dict[str, Any] | None:
    """The object's metadata, None when there is no such object."""
    from botocore.exceptions import ClientError

    try:
        return dict(s3.head_object(Bucket=location.bucket, Key=key))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return None
        raise


def _current(s3: Any, location: Location) -> str:
    """The revision ``current`` names ("" when there is none yet)."""
    from botocore.exceptions import ClientError

    try:
        body = s3.get_object(Bucket=location.bucket, Key=location.key(CURRENT))["Body"].read()
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return ""
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
        sent = not _exists(s3, location, key)
        if sent:
            with bundle(root, context_type, revision) as path:
                advance = progress(path.stat().st_size)
                s3.upload_file(str(path), location.bucket, key, Callback=advance,
                               ExtraArgs={"ContentType": "application/gzip",
                                          "Metadata": {"revision": revision}})
        if _current(s3, location) != revision:  # unchanged files write nothing
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
    key = location.key(f"{revision}.tar.gz")
    try:
        found = _head(s3, location, key)
        if found is None:
            raise CommandError(f"{location} holds no bundle of revision {revision}: push it "
                               "there first")
        s3.download_file(location.bucket, key, str(target),
                         Callback=progress(found.get("ContentLength")))
    except (Boto3Error, BotoCoreError, ClientError) as exc:
        raise CommandError(f"S3 synchronization from {location} failed: {exc}") from exc
