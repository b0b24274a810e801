/* session.h: one `tumble.v1` WebSocket, as the network thread's files share it.
 *
 * server/net/ splits a session's work by responsibility:
 *   session.c       its life: the upgrade (refusals answered in HTTP), open,
 *                   close, the per-address connection count, leaving the
 *                   room, and the lws callback that dispatches to the others;
 *   inbound.c       what the client sends: reassembly, decoding, the join,
 *                   the limits (one token-bucket type, net/limits.h) and
 *                   what a refused message gets (PROTOCOL.md §8);
 *   outbox.c        what it is sent: the control queue, the snapshot slots,
 *                   the contacts slot, worker output delivered to sessions,
 *                   and the writes;
 *   link.c          what the client's link delivers (pings, link reports,
 *                   the send accounting) and the snapshot rate that fits
 *                   it (the stream tier);
 *   housekeeping.c  the 2 Hz timer: slow readers, pings, idle rooms;
 *   server.c        the lws context on the libuv loop and the server's
 *                   lifecycle.
 * Everything here runs on the network thread.
 */
#ifndef TB_SESSION_H
#define TB_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <libwebsockets.h>

#include "net/server.h"
#include "sim/input.h"
#include "sim/msg.h"
#include "sim/room.h"
#include "sim/sched.h"
#include "sim/wire.h"

/* Room events supersede each other (outbox.c), so what fills ctl is a
 * client's own requests; this is far more than a client that reads needs. */
#define TB__CTL_CAP 256
#define TB__SNAP_SLOTS 8
#define TB__SEQ_FIFO 64
/* Refused messages answered, per connection: bursts of TB__ERROR_BURST,
 * then TB__ERROR_RATE a second; one more closes it (PROTOCOL.md §8). */
#define TB__ERROR_BURST 32.0
#define TB__ERROR_RATE 16.0
#define TB__RX_CHUNK 4096

/* What the server knows of one client's link, and the stream tier that fits
 * it (link.c). Times in ns (tb_clock), rates in bytes/s. */
typedef struct tb_link {
    uint64_t payload_sent;     /* WebSocket payload bytes written (what recv_bytes counts) */
    int64_t rtt_ns;            /* newest round trip: ping to pong */
    int64_t rtt_min_ns, rtt_min_next_ns, rtt_min_since_ns; /* smallest of the last 10-20 s (two windows) */
    int64_t client_rtt_ns;     /* the client's own estimate, from its reports (0: none) */
    int64_t queue_ns, queue_prev_ns; /* queueing delay by the newest two pongs */
    int64_t view_lag_ns;       /* from the newest link report; -1 before one */
    uint32_t ack_tick;
    /* delivery samples: bytes known delivered (pongs: wire bytes; reports:
     * payload) at a time, and the rates they give */
    uint64_t pong_delivered;  int64_t pong_at_ns;
    uint32_t report_bytes;    int64_t report_at_ns; bool has_report_bytes;
    double delivered_bps;      /* EWMA of delivery samples */
    /* slow-link evidence: delivery samples in a row that show the client
     * reading, but clearly slower than it is written to (link.c) */
    int slow_samples;
    int64_t slow_since_ns, slow_last_ns;
    double slow_bps;           /* mean rate of those samples */
    double report_client_ms;   /* client_time of the previous report with recv_bytes */
    double capacity_bps;       /* what the link delivered when it could not take what was sent */
    int64_t capacity_at_ns;    /* ... seen then (0: never; forgotten after 30 s) */
    int64_t congested_since_ns;
    uint64_t rate_bytes; int64_t rate_since_ns; double sent_bps; /* what we wrote, per second */
    double frame_bytes;        /* EWMA of the snapshot frames written */
    /* the stream tier (room.h): tier is what the session is fed now; it
     * moves to next once a keyframe of that tier arrives */
    int tier, next;
    /* the bandwidth lane (room.h): lane is the client's, lane_now the one it
     * is fed now (0 from its welcome, whose keyframe is lane 0's, until a
     * keyframe of its lane arrives); kbps its budget (0: none) */
    int lane, lane_now;
    uint32_t kbps;             /* the budget asked for (--client-kbps, hello.kbps; 0: none) */
    uint32_t auto_kbps;        /* the budget the link set (link.c: a slow link; 0: none) */
    int64_t joined_ns;         /* when the welcome was queued */
    int64_t budget_ns;         /* when the link last changed the budget */
    int64_t used_ns;           /* when the link last delivered 3/4 of the budget with no queue */
    double used_bps;           /* what it delivered then: the link carries at least that */
    bool start_checked;        /* the first round trip was seen: a remote client starts under a budget */
    bool ramping;              /* that start budget is going up while the link has not been the limit */
    uint32_t ramp_from;        /* the level before the last step up of the ramp */
    int64_t changed_ns, calm_since_ns, last_up_ns, last_check_ns;
    int64_t queue_at_change_ns;
    int64_t settle_ns;         /* after a change took effect: time for its keyframe to cross */
    int64_t probe_hold_ns;     /* calm time before an unproven step up; doubles after a failed one */
} tb_link;

typedef struct tb_session {
    struct lws *wsi;
    tb_server *server;
    uint32_t id;
    char addr[48];        /* what per-address limits count: peer, or X-Forwarded-For via a trusted proxy */
    char path_room[40];   /* the room of a /ws/<room> URL; "" for any other path */
    struct tb_session *next, *prev;           /* server->sessions */
    tb_room *room;
    struct tb_session *room_next, *room_prev; /* room->net list */
    bool welcomed;
    bool watcher;         /* joined as a watcher: receives the room, its inputs are refused (watch_only) */

    tb_msg *ctl[TB__CTL_CAP];
    int ctl_head, ctl_count;
    tb_msg *slot[TB__SNAP_SLOTS]; /* oldest first */
    int slot_count;
    tb_msg *contacts;     /* the newest contacts view, written after the slots */
    uint32_t sent_tick;   /* the state the client holds once ctl is written */
    uint32_t queued_tick; /* ... and once the slots are written too */
    int64_t last_write_ns;
    bool write_asked;     /* lws_callback_on_writable called, callback not yet run */
    bool flush_listed;    /* on server->flush */
    struct tb_session *flush_next;
    /* slow-reader watch (housekeeping): bytes handed to the socket, and what
     * the kernel still held unacknowledged at the last look */
    uint64_t wire_bytes, wire_bytes_checked;
    int prev_outq;
    /* the link check's own last look (link.c: tb__queue_now): the kernel held
     * outq_seen when wire_bytes was outq_wire, so it holds at most outq_seen
     * + what was written since, and no look is needed while that is small */
    uint64_t outq_wire;
    int outq_seen;
    int64_t last_progress_ns;
    /* read-through check: a ping goes out every TB__PING_INTERVAL_NS; once
     * the kernel has had it acknowledged (in the client's receive buffer) the
     * client has --slow-reader-timeout seconds to read up to it and pong */
    bool ping_wanted;
    int64_t ping_sent_ns;      /* 0: no ping outstanding */
    uint64_t ping_end;         /* wire_bytes just past the ping frame */
    int64_t ping_delivered_ns; /* when it was seen acknowledged; 0: not yet */
    int64_t last_ping_ns;
    tb_link link;
    unsigned char *tx;    /* LWS_PRE + composed snapshot frame */
    size_t tx_cap;

    /* inputs pushed, by room arrival number, to tell the client which of
     * them a snapshot includes */
    struct { uint64_t serial; uint32_t seq; } seqs[TB__SEQ_FIFO];
    int seq_head, seq_count;
    uint32_t acked_seq;
    uint32_t grab_pointers[64]; /* pointers held (--max-grabs-per-client) */
    int grab_count;

    unsigned char *rx;
    size_t rx_len, rx_cap;
    bool rx_text;
    bool rx_paused;
    int rx_turn_count;
    uint64_t rx_turn;     /* uv_now() of the turn rx_turn_count counts */

    /* PROTOCOL.md §8, "What a flooder gets": inputs, throws, the refusals
     * of rate limited messages (flood) and the error replies (errors) */
    tb_bucket input, throws, flood, errors;
    int64_t last_rate_error_ns;

    bool closing, close_sent;
    bool slow_counted;
    bool fleet_asked;     /* the fleet has answered this hello (net/fleet.h) */
    int close_code;
    char close_reason[64];
} tb_session;

/* A LEAVE must reach the worker (it ends the client's grabs and drops it
 * from the peers): if the room's ring is full it waits here and is retried
 * on every wake and housekeeping tick. */
typedef struct tb_pending_leave {
    tb_room *room;
    tb_input in;
} tb_pending_leave;

/* outbox.c */
bool tb_outbox_has_output(const tb_session *s);
void tb_outbox_clear_ctl(tb_session *s);
void tb_outbox_clear_slots(tb_session *s);
void tb_outbox_clear_contacts(tb_session *s);
void tb_outbox_ask_writable(tb_session *s);
/* Written at the end of the delivery batch, or on a WRITEABLE callback. */
void tb_outbox_want_write(tb_session *s);
/* A ping is due: written at once from on_wake or the housekeeping timer
 * when nothing waits in lws, else first in the next WRITEABLE callback. */
void tb_outbox_ping(tb_session *s);
/* Queue a message for ctl (takes the caller's reference); room events
 * supersede an unsent one of their kind. */
void tb_outbox_push_ctl(tb_session *s, tb_msg *msg);
void tb_outbox_on_wake(uv_async_t *handle);
/* The session's next snapshot must be a keyframe of the tier it streams (or
 * waits for): asks the worker for one. */
void tb_outbox_want_key(tb_session *s);
/* LWS_CALLBACK_SERVER_WRITEABLE: a due ping, else the queued frames, else
 * the close frame; -1 when the socket failed. */
int tb_outbox_writeable(tb_session *s);
void tb_session_begin_close(tb_session *s, int code, const char *reason);
void tb_session_count_slow_reader(tb_session *s);

/* link.c */
void tb_link_init(tb_session *s, int64_t now);
void tb_link_written(tb_session *s, size_t payload, bool snapshot);
void tb_link_pong(tb_session *s, int64_t now);
void tb_link_report(tb_session *s, const tb_client_msg *m, int64_t now);
/* Re-evaluates the stream tier (at most every 50 ms); asks for a ping when due. */
void tb_link_check(tb_session *s, int64_t now);
/* A joined session: counted at tier 0; leaving: uncounted. */
void tb_link_joined(tb_session *s);
void tb_link_left(tb_session *s);
/* The keyframe of the tier the session waits for arrived: it streams that tier now. */
void tb_link_switched(tb_session *s, size_t key_bytes);
/* Recomputes room->tiers_wanted from its sessions (network thread). */
void tb_link_room_tiers(tb_room *room);
/* The bits of the streams the session is fed and moves to (room.h TB_ROOM_STREAM). */
unsigned tb_link_streams(const tb_session *s);

/* inbound.c */
/* LWS_CALLBACK_RECEIVE: a fragment of a client frame; -1 when out of memory. */
int tb_inbound_receive(tb_session *s, const void *in, size_t len);
int tb_inbound_error_code(const tb_msg *msg);
void tb_inbound_answer_refused(tb_session *s, tb_msg *error, int code);
void tb_inbound_send_error(tb_session *s, int code, const char *message, int64_t seq);
uint32_t tb_inbound_acked_seq(tb_session *s, uint64_t serial);

/* session.c */
int tb_session_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len);
int tb_session_confirm_upgrade(tb_server *server, struct lws *wsi, const char *upgrade);
void tb_session_leave_room(tb_session *s);
void tb_session_retry_leaves(tb_server *server);

/* housekeeping.c */
void tb_housekeeping_cb(uv_timer_t *timer);

#endif
