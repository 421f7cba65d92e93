"""Container images per role: resolution (override, local build, official) and the offline build."""
