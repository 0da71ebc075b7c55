"""Built-in toolsets: `demo` (the default) and `conformance` (the official suite's fixtures)."""
