"""The output directory: its format in one module, the writer, reading it back, the lock."""
