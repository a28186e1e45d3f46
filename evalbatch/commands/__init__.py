"""The `evalbatch` commands, one module each (`run`, `validate`, `regress`, `verify`, `ingest`,
`sql`, `export`, `report`, `explain`, `history`): each parses its options, calls the library and
prints. Beside them: `printing` (the tables the commands print), `progress` (`run`'s progress
bar), `options`, `filters`, `resources` and `types` (the options and click types they share) and
`faults` (how every command stops on a fault). `evalbatch.cli` registers each command on its
group."""
