"""JSON-RPC's framing on the stdio of ``contextctl mcp``: what the MCP SDK's stdio transport
drops without a word (a line that is no JSON, a message it cannot read, a batch) is answered,
and a batch is answered as one array where the negotiated protocol has batches. A line is read
up to the service's request body limit: a longer one is refused, never held."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import AsyncIterator
from typing import Any, cast

import anyio
import mcp_types as types
from anyio import AsyncFile, to_thread
from mcp.shared._stream_protocols import WriteStream
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from pydantic import RootModel, ValidationError

from context_service.contextctl.upload import MAX_BODY
from context_service.contract.mcp_batches import BATCHING, INITIALIZE_IN_BATCH

NOT_AN_ID = "Invalid Request: the id of a request must be a string or an integer"
# the SDK refuses a request before the handshake with invalid params and these words alone; the
# MCP specification names no other code for it (its lifecycle only says the client SHOULD NOT)
SDK_REFUSAL = "Invalid request parameters"
NOT_INITIALIZED = ("Session not initialized: send initialize first (before it only ping is "
                   "answered)")
# A line (one message or one batch) is what one POST to the service's /mcp carries, and is
# bounded as its body is: a line of gigabytes was held whole before anything was checked.
LINE_LIMIT = MAX_BODY  # bytes of UTF-8, its newline not counted
TOO_LONG = (f"Invalid Request: a line is at most {LINE_LIMIT} bytes (the service's request "
            "body limit); this one was longer and was not read")
_SKIP = 64 * 1024  # characters of an over-long line's rest read (and dropped) at a time


async def _bounded_lines(stdin: AsyncFile[str]) -> AsyncIterator[str | None]:
    """The lines of ``stdin``, None for one longer than ``LINE_LIMIT`` bytes: at most the
    limit and one character of it is held, its rest read in pieces and dropped (iterating the
    file, as the SDK did, reads a line whole however long). A byte that is not UTF-8 is read
    as one character (``surrogateescape``), so a line is measured in the bytes it was sent
    in, then handed on with each such byte replaced (U+FFFD), as the bridge always read them:
    three bytes each once replaced, 400 KB of them measured as 1.2 MB were refused as past
    the limit."""
    cast(io.TextIOWrapper, stdin.wrapped).reconfigure(errors="surrogateescape")
    while line := await _readline(stdin, LINE_LIMIT + 1):
        content = line.removesuffix("\n")
        if len(content) > LINE_LIMIT:  # past it in characters, its end not read yet
            while (rest := await _readline(stdin, _SKIP)) and not rest.endswith("\n"):
                pass
            yield None
        elif len(content) > LINE_LIMIT // 4 and len(_sent(content)) > LINE_LIMIT:
            yield None  # within the limit in characters, past it in bytes: read whole already
        else:
            yield _replaced(line)


def _sent(text: str) -> bytes:
    """The bytes ``text`` was read from (a byte that is not UTF-8 read as ``surrogateescape``
    reads it)."""
    return text.encode("utf-8", "surrogateescape")


def _replaced(line: str) -> str:
    """``line`` with each byte that is not UTF-8 replaced by U+FFFD, as ``errors="replace"``
    reads it."""
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return _sent(line).decode("utf-8", "replace")
    return line


async def _readline(stdin: AsyncFile[str], size: int) -> str:
    """``stdin``'s next line, or its first ``size`` characters ("" at its end)."""
    return await to_thread.run_sync(stdin.wrapped.readline, size, limiter=stdin.limiter)


class _BatchAnswer(RootModel[list[types.JSONRPCMessage]]):
    """The answers to one batch, written as one JSON array (the SDK writes ``message``)."""


class _Batch:
    def __init__(self) -> None:
        self.owed: set[str] = set()  # the ids (``_key``) of its requests not answered yet
        self.answers: list[types.JSONRPCMessage] = []


class Framing:
    """JSON-RPC's framing rules on stdio, which the SDK's stdio transport leaves out: it drops a
    line that is no JSON, or no message it can read (an id that is no string or integer, another
    ``jsonrpc``, a method that is no string), and a batch, without a word, so the client waits
    for ever. Each such line is answered here, with ``id`` null: a parse error (-32700) or an
    invalid request (-32600). A batch is answered where the negotiated protocol has batches
    (2025-03-26; ``initialize`` settles the version): its members handed to the server one by
    one, their answers written as one array (none owed: nothing), an ``initialize`` among them
    refused (2025-03-26 forbids it there); elsewhere it is an invalid request. The SDK's bare
    refusal of a request before the handshake is reworded to say so. A line longer than the
    service's request body limit is an invalid request too, answered without being held."""

    def __init__(self) -> None:
        self.version: str | None = None  # the protocol ``initialize`` settled
        self.initializing: set[str] = set()  # ids (``_key``) of ``initialize`` not answered yet
        self.initialized = False  # the SDK's gate is open: ``initialize`` answered, or
        # ``notifications/initialized`` sent (which opens it too)
        self.batches: list[_Batch] = []
        self.write: WriteStream[SessionMessage] | None = None
        self.attached = anyio.Event()

    def attach(self, write: WriteStream[SessionMessage]) -> None:
        self.write = write
        self.attached.set()

    async def messages(self, stdin: AsyncFile[str]) -> AsyncIterator[str]:
        """The lines of stdin that are one message each, for the SDK to read; the others are
        answered here, a batch's members handed on one by one."""
        async for line in _bounded_lines(stdin):
            if line is None:
                await self._refuse(types.INVALID_REQUEST, TOO_LONG)
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except (ValueError, RecursionError):
                await self._refuse(types.PARSE_ERROR, "Parse error: the line is no JSON text")
                continue
            if isinstance(message, list):
                for member in await self._batch(message):
                    yield member
                continue
            if (reason := _not_a_message(message)) is not None:
                await self._refuse(types.INVALID_REQUEST, reason)
                continue
            if message.get("method") == "initialize" and "id" in message:
                self.initializing.add(_key(message["id"]))
            if message.get("method") == "notifications/initialized" and "id" not in message:
                self.initialized = True
            await self._cancelled(message)
            yield line

    async def _batch(self, members: list[Any]) -> list[str]:
        """The members of a batch to hand on; the batch registered for its answers."""
        if self.version != BATCHING:
            await self._refuse(types.INVALID_REQUEST, "Invalid Request: JSON-RPC batches "
                               f"belong to protocol {BATCHING} alone; send each message alone")
            return []
        if not members:
            await self._refuse(types.INVALID_REQUEST, "Invalid Request: an empty batch")
            return []
        batch, handed = _Batch(), []
        for member in members:
            if (reason := _not_a_message(member)) is not None:
                batch.answers.append(_refusal(types.INVALID_REQUEST, reason))
                continue
            if member.get("method") == "initialize":  # never run: it would renegotiate
                if "id" in member:  # a notification is owed no answer
                    batch.answers.append(_refusal(types.INVALID_REQUEST, INITIALIZE_IN_BATCH,
                                                  member["id"]))
                continue
            if "method" in member and "id" in member:
                batch.owed.add(_key(member["id"]))
            await self._cancelled(member)
            handed.append(json.dumps(member))
        if batch.owed:
            self.batches.append(batch)
        elif batch.answers:
            await self._send(_BatchAnswer(batch.answers))
        return handed

    async def _cancelled(self, message: dict[str, Any]) -> None:
        """A batch member cancelled is owed no answer (the server sends none): the batch is
        answered without it, rather than held for ever."""
        if message.get("method") != "notifications/cancelled" or "id" in message:
            return
        key = _key((message.get("params") or {}).get("requestId"))
        for batch in self.batches:
            if key in batch.owed:
                batch.owed.discard(key)
                if not batch.owed:
                    self.batches.remove(batch)
                    if batch.answers:
                        await self._send(_BatchAnswer(batch.answers))
                return

    async def _refuse(self, code: int, message: str) -> None:
        await self._send(_refusal(code, message))

    async def _send(self, message: types.JSONRPCMessage | _BatchAnswer) -> None:
        await self.attached.wait()
        assert self.write is not None
        with contextlib.suppress(anyio.ClosedResourceError):  # the server stopped: no one asks
            await self.write.send(SessionMessage(cast(types.JSONRPCMessage, message)))

    def answering(self, write: WriteStream[SessionMessage]) -> WriteStream[SessionMessage]:
        """The server's ``write`` with the answers to a batch held until it is answered whole,
        and the version ``initialize`` settled noted."""
        framing = self

        class Answering:
            async def send(self, item: SessionMessage) -> None:
                if (held := framing.held(item.message)) is not None:
                    if held.answers is not None:
                        await write.send(SessionMessage(cast(Any, held.answers)))
                    return
                await write.send(item)

            async def aclose(self) -> None:
                await write.aclose()

            async def __aenter__(self) -> Answering:
                return self

            async def __aexit__(self, *_: object) -> None:
                await self.aclose()

        return Answering()

    def held(self, message: types.JSONRPCMessage) -> _Held | None:
        """None: ``message`` is written as it is; else it answers a batch, whose answers are
        written (``answers``) once it was the last one owed."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return None
        key = _key(message.id)
        if key in self.initializing:
            self.initializing.discard(key)
            if isinstance(message, types.JSONRPCResponse):
                self.version = str(message.result.get("protocolVersion"))
                self.initialized = True
        elif isinstance(message, types.JSONRPCError) and not self.initialized:
            message.error = _explained(message.error)
        for batch in self.batches:
            if key in batch.owed:
                batch.owed.discard(key)
                batch.answers.append(message)
                if batch.owed:
                    return _Held(None)
                self.batches.remove(batch)
                return _Held(_BatchAnswer(batch.answers))
        return None


class _Held:
    def __init__(self, answers: _BatchAnswer | None) -> None:
        self.answers = answers


def _refusal(code: int, message: str, request_id: Any = None) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))


def _explained(error: types.ErrorData) -> types.ErrorData:
    """The SDK's refusal of a request before the handshake, said as such: its bare "invalid
    request parameters" sends the client looking at params that are fine. Its code stays."""
    if error.code != types.INVALID_PARAMS or error.message != SDK_REFUSAL:
        return error
    return error.model_copy(update={"message": NOT_INITIALIZED})


def _not_a_message(message: Any) -> str | None:
    """Why ``message`` is no JSON-RPC message the server can read, or None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return 'Invalid Request: a message is a JSON object with "jsonrpc": "2.0"'
    if "method" in message:
        if not isinstance(message["method"], str):
            return "Invalid Request: the method must be a string"
        if "id" in message and not _is_id(message["id"]):
            return NOT_AN_ID
        if not isinstance(message.get("params", {}), dict | None):
            return "Invalid Request: params must be an object"
    elif not ("id" in message and ("result" in message) != ("error" in message)):
        return "Invalid Request: neither a request, a notification nor a response"
    try:
        types.jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError:
        return "Invalid Request: the message does not match JSON-RPC's shape"
    return None


def _key(request_id: Any) -> str:
    """A request id as the SDK correlates it: ``7`` and ``"7"`` are one request there (it
    cancels the call ``7`` on a cancellation naming ``"7"``, and never answers it), so they are
    one here too, or a batch would wait for ever for an answer that never comes."""
    return json.dumps(coerce_request_id(request_id) if _is_id(request_id) else request_id)


def _is_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
