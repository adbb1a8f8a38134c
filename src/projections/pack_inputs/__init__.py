"""pack_inputs: the pack-input events of each namespace, and the fold to a position."""
