"""The paired regression verdict between two runs of one suite (§5)."""
