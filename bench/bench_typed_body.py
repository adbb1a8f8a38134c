"""What a typed body costs: the same route with its body as a ``JSONBody[Sent[Body]]``
parameter (documented in the OpenAPI document) and with ``await request.body()`` (the raw
path it replaced), decoding the same create-context body with the same decoder.

    python -m bench.bench_typed_body [--requests 20000] [--rounds 5]

Both routes live in one Litestar app, driven in-process over ASGI (no socket, so the framework's
share is not hidden by the network). Rounds alternate between the two routes; the figure is
the ratio of their median per-request times, with the p50/p95 of each. A raw path is worth
keeping on a route only if it is at least 10 % faster than the typed one.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from litestar import Litestar, Request, Response, post
from litestar.params import JSONBody

from bench.harness import percentile
from context_service.contract.contexts import CreateContextRequest
from context_service.http.body import decode
from context_service.http.sent import NOTHING, Sent, SentBody

BODY = json.dumps({"name": "orders", "namespace": "team-a", "type": "memory", "storage": {
    "backend": "pvc", "size": "1Gi", "accessMode": "ReadWriteOnce"}}).encode()


@post("/raw")
async def raw(request: Request[Any, Any, Any]) -> Response[Any]:
    req = decode(await request.body(), CreateContextRequest, refuse_nul=True)
    return Response(req.name.encode() if req.name else b"", status_code=201)


@post("/typed", dto=SentBody)
async def typed(data: JSONBody[Sent[CreateContextRequest]] = NOTHING) -> Response[Any]:
    req = data.decode(refuse_nul=True)
    return Response(req.name.encode() if req.name else b"", status_code=201)


APP = Litestar([raw, typed], openapi_config=None, logging_config=None)


async def once(path: str) -> float:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": BODY, "more_body": False}

    status = 0

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 1234),
             "headers": [(b"content-type", b"application/json"),
                         (b"content-length", str(len(BODY)).encode())]}
    started = time.perf_counter()
    await APP(scope, receive, send)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - started
    assert status == 201, (path, status)
    return elapsed


async def main(requests: int, rounds: int) -> None:
    samples: dict[str, list[float]] = {"/raw": [], "/typed": []}
    for path in samples:  # warm both
        for _ in range(500):
            await once(path)
    for r in range(rounds):
        order = ["/raw", "/typed"] if r % 2 == 0 else ["/typed", "/raw"]
        for path in order:
            samples[path] += [await once(path) for _ in range(requests // rounds)]
    for path, values in samples.items():
        print(f"{path:7} p50 {percentile(values, 50) * 1e6:7.1f} us"
              f"  p95 {percentile(values, 95) * 1e6:7.1f} us")
    ratio = statistics.median(samples["/typed"]) / statistics.median(samples["/raw"])
    verdict = "keep a raw path" if ratio >= 1.10 else "no raw path: under the 10 % bar"
    print(f"typed / raw, median per request: {ratio:.3f}x ({verdict})")

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.rounds))
