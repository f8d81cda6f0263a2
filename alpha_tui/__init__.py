"""alpha-tui: the terminal face that builds, launches and watches a run."""
