"""Package list for setuptools: the import package ``context_service`` is the source tree
``src/`` (``package-dir`` in pyproject.toml), so its subpackages (and the data directories,
which Python sees as namespace packages) are found there and renamed. Finding them by name would
depend on the ``context_service -> src`` symlink of a checkout, which an sdist or a copy of the
sources does not have."""

from setuptools import find_namespace_packages, setup

# ``devcluster`` (the local control plane of ``make run``) stays in the checkout
found = find_namespace_packages("src", exclude=["*__pycache__*", "devcluster", "devcluster.*"])
# the SQL migrations live in the top-level ``migrations/`` (mapped by ``package-dir``)
setup(packages=["context_service", *(f"context_service.{name}" for name in found),
                "context_service.migrations"])
