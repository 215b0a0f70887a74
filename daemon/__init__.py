"""ssebench daemon: the only part that touches the source tree."""
