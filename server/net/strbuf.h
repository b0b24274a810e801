/* strbuf.h: a growable string for HTTP bodies (JSON, metrics) and Redis
 * values. A failed allocation or format sets `failed` and stops growing; the
 * caller checks it once at the end. Network thread only (no locking). */
#ifndef TB_NET_STRBUF_H
#define TB_NET_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tb_strbuf {
    char *buf;
    size_t len, cap;
    bool failed;
} tb_strbuf;

/* Append printf-style; grows the buffer as needed. */
void tb_strbuf_printf(tb_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s as a JSON string (quotes, backslashes and control bytes escaped). */
void tb_strbuf_json_str(tb_strbuf *b, const char *s);

#endif
