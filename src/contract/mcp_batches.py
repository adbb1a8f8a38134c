"""JSON-RPC batches as both MCP transports (``/mcp`` and ``contextctl mcp``'s stdio) answer
them: protocol 2025-03-26 alone has them, and forbids an ``initialize`` among their members.
Free of the MCP SDK, which building the application does not load."""

BATCHING = "2025-03-26"
INITIALIZE_IN_BATCH = ("Invalid Request: initialize must not be part of a JSON-RPC batch "
                       f"(protocol {BATCHING}); send it alone")
