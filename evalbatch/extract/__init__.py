"""The SQL stage: event files in, one row per trial (with its calls and usage) out."""
