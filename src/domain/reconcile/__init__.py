"""Reconciliation as pure functions: what the cluster should hold for the recorded contexts and
pools (``desired``), the steps that get it there (``plan``), and what the observed objects mean
for context and pool status (``observe``). The worker that runs them lives in the Kubernetes
adapter; nothing here performs I/O except ``actions.apply``, which calls the cluster port.
"""
