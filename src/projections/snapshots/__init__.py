"""snapshot_objects: the VolumeSnapshots the snapshot reconciler must keep or remove (spec 6.6)."""
