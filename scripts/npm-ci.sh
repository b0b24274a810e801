#!/bin/sh
# Installs node_modules from package-lock.json (npm ci), bounded in time.
# npm ci takes 5-30 s here; a registry connection that stalls can hold it for good
# (one CI run waited over an hour at this step), and inside a container build its
# requests were once seen to wait 190 s each before going on. So each attempt gets a
# time limit (600 s), and a stalled or failed attempt is retried, the later ones
# logging every request so the log shows what it waited for.
# Usage: scripts/npm-ci.sh   (env: TUMBLE_NPM_TIMEOUT seconds per attempt, default 600;
#        TUMBLE_NPM_PAUSE seconds between attempts, default 5)
set -u
limit=${TUMBLE_NPM_TIMEOUT:-600}
pause=${TUMBLE_NPM_PAUSE:-5}
attempt=1
while :; do
  extra=""
  [ "$attempt" -gt 1 ] && extra="--loglevel=http"
  echo "npm ci --no-audit --no-fund (attempt $attempt, at most ${limit} s)"
  # --fetch-timeout: a request with no answer for 60 s is retried (npm's default is 5 min)
  timeout -k 10 "$limit" npm ci --no-audit --no-fund --fetch-timeout=60000 --fetch-retries=4 $extra
  rc=$?
  [ $rc -eq 0 ] && exit 0
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    echo "tumble: npm ci did not finish within ${limit} s" >&2
  else
    echo "tumble: npm ci failed (exit $rc)" >&2
  fi
  if [ "$attempt" -ge 3 ]; then
    echo "tumble: npm ci failed 3 times; is https://registry.npmjs.org reachable? (npm config get registry)" >&2
    exit 1
  fi
  attempt=$((attempt + 1))
  sleep "$pause"
done
