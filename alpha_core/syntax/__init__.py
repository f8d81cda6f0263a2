"""Source text to syntax trees: cutting a file into pieces, parsing each, and the tree types."""
