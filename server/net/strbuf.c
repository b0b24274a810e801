/* strbuf.c: see strbuf.h. */
#include "net/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void tb_strbuf_printf(tb_strbuf *b, const char *fmt, ...)
{
    if (b->len > b->cap) { /* never: but a wrapped size_t below would write anywhere */
        b->failed = true;
        return;
    }
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->buf ? b->buf + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->failed = true;
            return;
        }
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = (b->cap ? b->cap * 2 : 1024) + (size_t)n;
        char *nb = realloc(b->buf, cap);
        if (!nb) {
            b->failed = true;
            return;
        }
        b->buf = nb;
        b->cap = cap;
    }
}

void tb_strbuf_json_str(tb_strbuf *b, const char *s)
{
    tb_strbuf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            tb_strbuf_printf(b, "\\%c", c);
        else if (c < 0x20)
            tb_strbuf_printf(b, "\\u%04x", c);
        else
            tb_strbuf_printf(b, "%c", c);
    }
    tb_strbuf_printf(b, "\"");
}
