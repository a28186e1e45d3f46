"""Reductions: trials to task entries, tasks to suite figures and EvalSummaries (§3.5, §3.6)."""
