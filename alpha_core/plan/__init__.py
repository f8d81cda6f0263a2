"""Plans and pairings: membership, topology, the combine tree on roles, per-role projection."""
