"""Objects the development stand-in writes: conditions, and the children of Sandboxes and
SandboxClaims, shaped as the agent-sandbox controller makes them (pure functions)."""

from __future__ import annotations

from datetime import UTC, datetime

from context_service.adapters.kubernetes.parse import meta, obj, text
from context_service.adapters.kubernetes.rest import JSON


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(status: bool, reason: str, message: str = "", since: str = "") -> JSON:
    """A complete metav1.Condition of type Ready (our CRDs require all five fields)."""
    return {
        "type": "Ready",
        "status": "True" if status else "False",
        "reason": reason,
        "message": message,
        "lastTransitionTime": since or now(),
    }


def owner_reference(owner: JSON) -> JSON:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta(owner)["name"],
        "uid": meta(owner)["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def sandbox_children(sandbox: JSON) -> tuple[list[JSON], JSON]:
    """PVC ``<template>-<sandbox>`` per volumeClaimTemplate (mounted as a volume named after the
    template), and the Pod named after the Sandbox with the pod template's metadata; all owned
    by the Sandbox."""
    m, spec = meta(sandbox), obj(sandbox.get("spec"))
    owner = [owner_reference(sandbox)]
    template = obj(spec.get("podTemplate"))
    pod_spec: JSON = dict(obj(template.get("spec")))
    volumes = list(pod_spec.get("volumes") or [])
    pvcs = []
    for vct in spec.get("volumeClaimTemplates") or []:
        vct_meta = obj(obj(vct).get("metadata"))
        claim = f"{text(vct_meta.get('name'))}-{m['name']}"
        pvcs.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {
                    "name": claim,
                    "labels": obj(vct_meta.get("labels")),
                    "annotations": obj(vct_meta.get("annotations")),
                    "ownerReferences": owner,
                },
                "spec": obj(obj(vct).get("spec")),
            }
        )
        volumes.append(
            {"name": vct_meta.get("name"), "persistentVolumeClaim": {"claimName": claim}}
        )
    if volumes:
        pod_spec["volumes"] = volumes
    template_meta = obj(template.get("metadata"))
    pod: JSON = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": m["name"],
            "labels": obj(template_meta.get("labels")),
            "annotations": obj(template_meta.get("annotations")),
            "ownerReferences": owner,
        },
        "spec": pod_spec,
    }
    return pvcs, pod


def claimed_sandbox(claim: JSON, template: JSON) -> JSON:
    """A Sandbox named after the claim, from the template's blueprint with the claim's
    ``additionalPodMetadata`` merged into the pod template, owned by the claim."""
    extra = obj(obj(claim.get("spec")).get("additionalPodMetadata"))
    spec = obj(template.get("spec"))
    pod_template: JSON = dict(obj(spec.get("podTemplate")))
    metadata = dict(obj(pod_template.get("metadata")))
    for key in ("labels", "annotations"):
        merged = {**obj(metadata.get(key)), **obj(extra.get(key))}
        if merged:
            metadata[key] = merged
    pod_template["metadata"] = metadata
    sandbox_spec: JSON = {"podTemplate": pod_template}
    for key in ("volumeClaimTemplates", "service"):
        if key in spec:
            sandbox_spec[key] = spec[key]
    return {
        "apiVersion": "agents.x-k8s.io/v1beta1",
        "kind": "Sandbox",
        "metadata": {"name": meta(claim)["name"], "ownerReferences": [owner_reference(claim)]},
        "spec": sandbox_spec,
    }
