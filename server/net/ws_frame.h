/* ws_frame.h: a server's WebSocket frame header (RFC 6455 5.2), for the
 * frames outbox.c writes several at a time (tb__write_batch). */
#ifndef TB_WS_FRAME_H
#define TB_WS_FRAME_H

#include <stddef.h>

/* A final binary frame's header for n payload bytes, unmasked (a server's),
 * written at p (room for 10 bytes): its length, 2, 4 or 10. */
size_t tb_ws_frame_header(unsigned char *p, size_t n);

/* The bytes such a frame takes in all, header and payload. */
size_t tb_ws_frame_size(size_t n);

#endif
