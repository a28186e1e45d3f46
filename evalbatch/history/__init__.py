"""Across nights (E-96, E-97): the runs of each suite and task in time order, read from one or more
output directories of `evalbatch run` (`series`), and what is read from that series: flaky tasks
and the night a task changed (`trends`)."""
