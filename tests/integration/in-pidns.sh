#!/usr/bin/env bash
# Run an integration test inside a new PID namespace with its own /proc
# (unshare --pid --fork --mount-proc). Exit 77 (skipped) where unshare is not allowed.
set -u
if ! unshare --pid --fork --mount-proc true 2>/dev/null; then
        echo "SKIP: unshare --pid --fork --mount-proc is not allowed here"
        exit 77
fi
export GV_IN_PIDNS=1
exec unshare --pid --fork --mount-proc bash "$@"
