"""Running what was built: launching roles, reading their events into run state, agreement
across roles, captures, resume, and what each role is shown as."""
