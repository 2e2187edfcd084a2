#!/usr/bin/env bash
# 45th session, call 1, one H200: start the `full` A/B (detached; .ab/old.tar = 9fd4823, old first), the new
# full's CuPy kernel cache kept with sources (KEEP_CACHE), and wait.
set -uo pipefail
MODE=start KEEP_CACHE=new-full WAIT_S=${WAIT_S:-560} bash tools/device_suite_ab.sh
