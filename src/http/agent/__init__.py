"""The ``/api/`` route family of the Agent Context API: its own error table and body rules, the
bearer pipeline every agent route calls first, and the agent and credential routes."""
