"""DEVELOPMENT ONLY: the local Kubernetes control plane behind ``make run`` (CS_KUBE=local) and the
stand-ins for node-side controllers it and the tests need. The service never imports this
package (an import-linter contract); ``bootstrap`` loads ``local`` by name in the local mode
only, and the wheel does not ship it.
"""
