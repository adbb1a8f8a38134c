"""The Kubernetes adapter: the only code that imports ``kubernetes``.

``cluster.KubernetesCluster`` implements the ``context_service.domain.cluster.Cluster`` port;
``client`` turns settings into a connection; ``local`` and ``devsim`` run a development control
plane.
"""
