"""Commands kept in modules of their own; `evalbatch.cli` registers each on its group."""
