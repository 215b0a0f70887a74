#!/bin/bash -eu
# The PoC crate depends on the project at /src/rle, the agent's working tree. Build a copy of
# it against the tree this script runs in, the build being graded.
PROJECT_DIR=$PWD
POC_CRATE=$(mktemp -d)
trap 'rm -rf "$POC_CRATE"' EXIT
cp -r "$(dirname "$(dirname "$(realpath "$1")")")/." "$POC_CRATE"
sed -i "s#\"/src/rle\"#\"$PROJECT_DIR\"#" "$POC_CRATE/Cargo.toml"
cd "$POC_CRATE"
cargo build --offline
./target/debug/rust-rle-1
