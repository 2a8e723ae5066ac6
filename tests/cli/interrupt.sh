#!/usr/bin/env bash
# Sends SIGINT to a running campaign and a running sweep; each must exit with 130, say it was
# interrupted and how far it got, and leave its finished work on disk.
# Usage: interrupt.sh CLUSTERTWIN SOURCE_DIR WORK_DIR
set -uo pipefail
exe=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
cd "$src" || exit 1
status=0

# Runs "$@" in the background and interrupts it once `ready` holds (polled every 0.1 s, at
# most 120 s, so a loaded machine waits longer instead of interrupting before any work is
# done); checks rc and stderr.
interrupt() {
  local name=$1 ready=$2 pattern=$3
  shift 3
  "$@" >"$work/$name.out" 2>"$work/$name.err" &
  local pid=$!
  for ((i = 0; i < 1200; ++i)); do
    eval "$ready" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -INT "$pid"
  wait "$pid"
  local rc=$?
  if [[ $rc != 130 ]]; then
    echo "$name: Expectation: exit code 130 / Actual result: $rc"; cat "$work/$name.err"; status=1
  fi
  if ! grep -Eq "$pattern" "$work/$name.err"; then
    echo "$name: Expectation: stderr matching '$pattern' / Actual result:"; cat "$work/$name.err"
    status=1
  fi
}

# The campaign: once its first trials are on disk (a second more, so it is mid-run).
interrupt campaign '[[ -s $work/campaign/campaign.h5 ]] && sleep 1' \
  'interrupted: [0-9]+ of 100000 trials finished \(in .*campaign/campaign.h5\)' \
  "$exe" campaign scenarios/small-3tier.yaml --trials 100000 --threads 2 --out "$work/campaign"
[[ -s $work/campaign/campaign.h5 ]] || { echo "campaign: no campaign.h5"; status=1; }

# The sweep: once sweep.csv holds a finished row.
interrupt sweep '(($(wc -l <"$work/sweep/sweep.csv" 2>/dev/null || echo 0) >= 2))' 'interrupted: [0-9]+ of 400 points finished \(in .*sweep.csv' \
  "$exe" sweep scenarios/small-3tier.yaml --vary training.tokens=1e9:4e11:1e9 --campaign \
  --trials 200 --threads 2 --out "$work/sweep"
# Every row in sweep.csv is a finished point, and the message counted them.
rows=$(($(wc -l <"$work/sweep/sweep.csv") - 1))
if ! grep -q "interrupted: $rows of 400 points" "$work/sweep.err"; then
  echo "sweep: Expectation: $rows rows reported / Actual result:"; cat "$work/sweep.err"; status=1
fi
((rows > 0)) || { echo "sweep: no finished rows"; status=1; }
exit $status
