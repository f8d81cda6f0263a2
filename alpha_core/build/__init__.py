"""From a checked choice to executables: the host and GPU objects of each role, linked, with
the deployment and the hosts file they were built for."""
