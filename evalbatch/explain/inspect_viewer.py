"""Where a trial of an ingested Inspect log is in Inspect's own log viewer (E-146): the command
that serves the log's directory and the address of the sample's page there.

The viewer (`inspect view`, Inspect 0.3) serves `--log-dir` on 127.0.0.1 port 7575 unless told
otherwise, and shows a sample at `#/logs/<log file>/samples/sample/<sample id>/<epoch>/`, the id
percent-encoded as its own path segment (a `/` in it included). Only the log file's name is
known here, not the directory it is in now: the command names that directory `LOG_DIR`.
"""

from __future__ import annotations

from urllib.parse import quote

#: where `inspect view` serves by default (its `--host` and `--port`)
VIEWER = "http://127.0.0.1:7575"
#: the command that serves the directory holding the log
VIEW_COMMAND = "inspect view --log-dir LOG_DIR"


def sample_url(log_file: str, sample_id: str, epoch: int) -> str:
    """The viewer's page of one sample and epoch of `log_file` (served by `VIEW_COMMAND`)."""
    return (
        f"{VIEWER}/#/logs/{quote(log_file, safe='')}/samples/sample/"
        f"{quote(sample_id, safe='')}/{epoch}/"
    )
