"""`evalbatch suite infer` (E-145): trajectory expectations proposed from the trials that passed.

Built on the pipeline: the grading says which trials passed and keeps what each called
(`shard.counted_calls`); `common_calls` finds what the passing trials of a task agree on, and
`suite_proposal` writes it into a suite document, the given suite's or one made from the log.
"""
