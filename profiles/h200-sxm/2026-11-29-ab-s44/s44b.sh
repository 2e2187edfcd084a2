#!/usr/bin/env bash
# 44th session, call 2, one H200: start the `full` A/B (detached; .ab/old.tar = 9fd4823) and wait.
set -uo pipefail
MODE=start WAIT_S=${WAIT_S:-540} bash tools/device_suite_ab.sh
