"""Built-in check plugins, registered through the ssebench.checks entry points."""
