"""Across nights (issue 18): a task's runs in time order, its trends, flakiness and changes."""
