"""Deployment engines: the same executables, started by a cluster's own tools.

An engine decides where each role runs and how its executable gets there; it never decides
what is computed. The roles' addresses, the secret's path and the checkpoint folder are
compiled in as deployment inputs (alpha_core.build.outputs.Deployment), exactly as for
`alpha run`.
"""
