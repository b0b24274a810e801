/* proxy.h: which address a connection counts as, behind trusted proxies.
 *
 * Behind a router (docker/nginx) every WebSocket comes from the router's
 * address, so the per-address limits (connections, room creations) would
 * lump all players together. With --trusted-proxies CIDR,... the server
 * believes X-Forwarded-For, but only from a peer inside one of those
 * ranges: the header is read right to left (each proxy appends the address
 * it saw), trusted hops are skipped, and the first address that is not a
 * trusted proxy is the client. From any other peer, or when the header is
 * missing or unparseable, the peer address itself counts -- a client
 * cannot pick its own address by sending the header. IPv4 and IPv6
 * (including IPv4-mapped ::ffff:a.b.c.d) are understood.
 */
#ifndef TB_PROXY_H
#define TB_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TB_PROXY_MAX 32

typedef struct tb_cidr {
    uint8_t addr[16]; /* IPv6, IPv4 as ::ffff:a.b.c.d */
    int prefix;       /* bits of addr that must match, 0..128 */
} tb_cidr;

typedef struct tb_proxy_list {
    tb_cidr ranges[TB_PROXY_MAX];
    int count;
} tb_proxy_list;

/* Parses "10.0.0.0/8, 172.16.0.0/12,::1" (a bare address is a /32 or
 * /128). Empty text is an empty list. 0, or -1 with a one-line reason. */
int tb_proxy_parse(tb_proxy_list *list, const char *text, char *err, size_t err_cap);

/* Is the textual address inside one of the ranges? */
bool tb_proxy_trusted(const tb_proxy_list *list, const char *addr);

/* The address a connection counts as: peer, or (peer trusted) the rightmost
 * untrusted address of xff (may be NULL). Writes it to out. */
void tb_proxy_client_addr(const tb_proxy_list *list, const char *peer, const char *xff, char *out, size_t cap);

#endif
