#!/bin/bash
set -euo pipefail
go test ./... -count=1
