/* pthread.h for the WebAssembly build of the physics: a stand-in, on the
 * include path only there (see `make wasm`).
 *
 * Why it exists: wasi-libc has no threads, and the physics still holds one
 * mutex, the settled-tower memo's in rigid_scenes.c, which issue #16 moves
 * out of the physics into sim. A WebAssembly instance runs one thread, so the
 * lock has nothing to exclude: it compiles to nothing here. Delete this file
 * when the memo has left the physics (no file in server/physics/ includes
 * <pthread.h> any more). */
#ifndef TB_WASM_COMPAT_PTHREAD_H
#define TB_WASM_COMPAT_PTHREAD_H

typedef struct pthread_mutex_t { int unused; } pthread_mutex_t;
#define PTHREAD_MUTEX_INITIALIZER {0}
static inline int pthread_mutex_lock(pthread_mutex_t *m) { (void)m; return 0; }
static inline int pthread_mutex_unlock(pthread_mutex_t *m) { (void)m; return 0; }

#endif
