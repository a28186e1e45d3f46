"""Trial grading: suites as tables, then each trial's score, path and fixtures (§3)."""
