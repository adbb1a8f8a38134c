"""The MCP endpoint of the agent API: Streamable HTTP at ``/mcp``, stateless, admitted by the
agent credential, its tools answered by the agent routes themselves."""
