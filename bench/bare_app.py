"""The baseline HTTP route: a Litestar app that answers a POST with its body, served the way the
service is (uvicorn, same options), so a write benchmark can say what HTTP alone costs here.

    python -m bench.bare_app PORT
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from litestar import Litestar, Request, Response, post


@post("/v1/contexts")
async def echo(request: Request[Any, Any, Any]) -> Response[bytes]:
    return Response(await request.body(), status_code=201, media_type="application/json")


app = Litestar([echo], openapi_config=None, logging_config=None)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning",
                access_log=False, timeout_keep_alive=5, proxy_headers=False, server_header=False)
