"""The MCP edge: the test_patch tool (app) and serving it over HTTP (http)."""
