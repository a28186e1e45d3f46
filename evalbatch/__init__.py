"""evalbatch: grade exported OpenWOP eval-run logs as RFC 0244 defines."""
