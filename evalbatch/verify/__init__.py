"""Audit a host: recompute every eval run and compare with what it recorded (§8)."""
