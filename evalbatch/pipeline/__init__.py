"""The engines: grade batches of whole runs, merge them, carry unchanged runs over."""
