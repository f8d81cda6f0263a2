"""What every phase leans on and nothing of the language: files read safely, memo tables,
sizes, spans of source text, the version, the port ranges."""
