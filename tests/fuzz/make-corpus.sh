#!/bin/bash
# Seeds tests/fuzz/corpus/<target>/ from the golden vectors (proto/vectors/).
#   tests/fuzz/make-corpus.sh
# fuzz_snapshot seeds are whole sequences (welcome, deltas, keyframes), each frame
# prefixed with its length as 2 big-endian bytes, as fuzz_snapshot.c reads them.
set -eu
cd "$(dirname "$0")/../.."
v=proto/vectors c=tests/fuzz/corpus
mkdir -p $c/fuzz_client_msg $c/fuzz_server_msg $c/fuzz_snapshot
for f in $v/c_*.mpk $v/x_*.mpk; do cp "$f" $c/fuzz_client_msg/; done
for f in $v/s_*.mpk $v/y_*.mpk $v/seq_*.mpk; do cp "$f" $c/fuzz_server_msg/; done
for s in tower flag dough; do
  out=$c/fuzz_snapshot/seq_$s; : > "$out"
  for f in $v/seq_${s}_*.mpk; do
    n=$(stat -c %s "$f")
    printf "\\x$(printf %02x $((n >> 8)))\\x$(printf %02x $((n & 255)))" >> "$out"
    cat "$f" >> "$out"
  done
done
for f in $v/y_*.mpk $v/seq_*_00_*.mpk; do cp "$f" $c/fuzz_snapshot/; done
echo "corpus: $(ls $c/fuzz_client_msg | wc -l) client, $(ls $c/fuzz_server_msg | wc -l) server, $(ls $c/fuzz_snapshot | wc -l) snapshot"
