"""Inputs: event files and their run filters, suite files, and ingest from other formats."""
