"""Why one eval run's trials graded as they did, call by call."""
