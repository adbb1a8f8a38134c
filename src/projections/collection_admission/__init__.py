"""collection_admission: what decides which collections reach agents (agent-context-api §3.4
rule 5): each collection's origin, the workspaces' members as the log had them, and the active
context sets' versions in force."""
