/* world_hash_main.c: the world-hash scenario of tumble-bench on its own, for
 * builds of the physics alone (tests/world-hash/check.sh compiles it with
 * the physics sources and tests/bench/bench_world_hash.c under several
 * compilers and flags; the WebAssembly build links the same three).
 * Prints exactly what `tumble-bench world-hash` prints. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime in bench.h */
#include "bench/bench.h"

void tb_bench_world_hash(const tb_bench_opts *opts);

int main(void)
{
    tb_bench_opts opts = {.runs = 1, .quick = 0};
    tb_bench_world_hash(&opts);
    return 0;
}
