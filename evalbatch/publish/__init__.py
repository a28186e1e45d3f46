"""Graded results for others: exports in outside formats and the HTML report."""
