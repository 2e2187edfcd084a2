#!/usr/bin/env bash
# A device job longer than one device command (600 s at most): started detached by one call, waited for by the next
# ones. The machine must stay warm between the calls, so call again within its idle time.
#   bash tools/device_detached.sh start W JOB [ARG...]   # `bash JOB ARG...` from here, detached (setsid), then waits
#   bash tools/device_detached.sh wait W                 # waits
# Each waits up to WAIT_S seconds (570) for W/DONE. The job's output goes to W/job.log and its exit status to W/rc,
# then W/DONE is touched. Exit status: 0 once the job is done, 3 while it still runs, 2 on bad use.
set -uo pipefail
mode=${1:-}; W=${2:-}; WAIT_S=${WAIT_S:-570}
if [[ -z "$W" || ( "$mode" != start && "$mode" != wait ) ]]; then
  echo "usage: device_detached.sh start W JOB [ARG...] | wait W" >&2; exit 2
fi
if [[ "$mode" == start ]]; then
  job=${3:-}
  [[ -f "$job" ]] || { echo "device_detached: no job script '$job'" >&2; exit 2; }
  if [[ -f "$W/PID" && ! -f "$W/DONE" ]] && kill -0 "$(cat "$W/PID")" 2>/dev/null; then
    echo "device_detached: a job still runs in $W (pid $(cat "$W/PID"))" >&2; exit 2
  fi
  mkdir -p "$W"; rm -f "$W/DONE" "$W/rc"
  W="$W" setsid nohup bash -c 'bash "$@" > "$W/job.log" 2>&1; echo $? > "$W/rc"; touch "$W/DONE"' job "${@:3}" \
    < /dev/null > /dev/null 2>&1 &
  echo $! > "$W/PID"
fi
[[ -d "$W" ]] || { echo "device_detached: no job was started in $W" >&2; exit 2; }
for _ in $(seq "$WAIT_S"); do [[ -f "$W/DONE" ]] && break; sleep 1; done
if [[ -f "$W/DONE" ]]; then
  echo "device_detached: done, exit $(cat "$W/rc" 2>/dev/null)"; exit 0
fi
echo "device_detached: still running"; tail -3 "$W/job.log" 2>/dev/null; exit 3
