#!/bin/bash -eu
cargo test --offline
