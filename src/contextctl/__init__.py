"""``contextctl``: the command-line client of Context Service.

It talks to a running service over HTTP only and imports nothing else from the service's own
packages (an import-linter contract keeps it that way), so it can run anywhere the service's URL
is reachable.
"""
