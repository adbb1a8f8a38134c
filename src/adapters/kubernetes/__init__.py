"""The Kubernetes adapter: the only service code that imports ``kubernetes``.

``cluster.KubernetesCluster`` implements the ``context_service.domain.cluster.Cluster`` port;
``client`` turns settings into a connection. The development control plane and its stand-ins
are in ``context_service.devcluster``, which nothing here imports.
"""
