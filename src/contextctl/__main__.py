"""``python -m context_service.contextctl``: the same as the ``contextctl`` console script."""

from context_service.contextctl.main import run

run()
