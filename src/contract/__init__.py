"""The agent API's contract: requests and answers as msgspec Structs, and the MCP tools built
on them. Imports nothing of the server, so the Python client and ``contextctl`` share it."""
