"""pytest configuration: the spec_map plugin records which clauses passing tests prove."""

pytest_plugins = ["spec_map.pytest_plugin"]
