"""Read models of agent access: workspace members and agent credentials, plus the in-process
directory the agent request pipeline verifies credentials against."""
