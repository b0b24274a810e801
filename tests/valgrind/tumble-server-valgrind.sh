#!/bin/sh
# Runs build/tumble-server under valgrind memcheck (make test-valgrind).
# Any memcheck error, or a definite/indirect leak, makes the exit code 99.
here=$(dirname "$0")
exec valgrind --tool=memcheck --fair-sched=yes --error-exitcode=99 --leak-check=full \
  --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
  --track-origins=yes --log-file="${TUMBLE_VALGRIND_LOG:-build/valgrind.log}" \
  "$here/../../build/tumble-server" "$@"
