"""The two sides of `evalbatch regress` and the runs of each suite paired across them (§5); the
verdict itself is `reduce.paired_verdict`'s."""
