"""`alpha`, the command-line face of the compiler: it parses arguments and renders, nothing more."""
