#!/bin/bash -eu
cargo build --offline
