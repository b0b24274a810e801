/* proxy.c: trusted proxies and X-Forwarded-For (see proxy.h). */
#define _GNU_SOURCE
#include "net/proxy.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Text -> 16 bytes (IPv4 mapped into ::ffff:0:0/96). Sets *v4 for IPv4. */
static bool tb__addr_parse(const char *text, uint8_t out[16], bool *v4)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, text, &a4) == 1) {
        memset(out, 0, 10);
        out[10] = out[11] = 0xff;
        memcpy(out + 12, &a4, 4);
        *v4 = true;
        return true;
    }
    if (inet_pton(AF_INET6, text, &a6) == 1) {
        memcpy(out, &a6, 16);
        *v4 = false;
        return true;
    }
    return false;
}

int tb_proxy_parse(tb_proxy_list *list, const char *text, char *err, size_t err_cap)
{
    memset(list, 0, sizeof *list);
    const char *p = text;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t n = strcspn(p, ", ");
        char item[64];
        if (n >= sizeof item) {
            snprintf(err, err_cap, "--trusted-proxies: '%.*s...' is too long for an address", 20, p);
            return -1;
        }
        memcpy(item, p, n);
        item[n] = 0;
        p += n;
        if (list->count == TB_PROXY_MAX) {
            snprintf(err, err_cap, "--trusted-proxies: more than %d ranges", TB_PROXY_MAX);
            return -1;
        }
        tb_cidr *c = &list->ranges[list->count];
        char *slash = strchr(item, '/');
        if (slash)
            *slash = 0;
        bool v4;
        if (!tb__addr_parse(item, c->addr, &v4)) {
            snprintf(err, err_cap, "--trusted-proxies: '%s' is not an IPv4 or IPv6 address", item);
            return -1;
        }
        int max = v4 ? 32 : 128;
        int prefix = max;
        if (slash) {
            char *end = NULL;
            long v = strtol(slash + 1, &end, 10);
            if (end == slash + 1 || *end || v < 0 || v > max) {
                snprintf(err, err_cap, "--trusted-proxies: '/%s' is not a prefix length 0..%d", slash + 1, max);
                return -1;
            }
            prefix = (int)v;
        }
        c->prefix = v4 ? prefix + 96 : prefix;
        list->count++;
    }
    return 0;
}

static bool tb__in(const tb_cidr *c, const uint8_t a[16])
{
    int full = c->prefix / 8, rest = c->prefix % 8;
    if (memcmp(c->addr, a, (size_t)full) != 0)
        return false;
    if (!rest)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (c->addr[full] & mask) == (a[full] & mask);
}

bool tb_proxy_trusted(const tb_proxy_list *list, const char *addr)
{
    uint8_t a[16];
    bool v4;
    if (!list->count || !tb__addr_parse(addr, a, &v4))
        return false;
    for (int i = 0; i < list->count; i++)
        if (tb__in(&list->ranges[i], a))
            return true;
    return false;
}

void tb_proxy_client_addr(const tb_proxy_list *list, const char *peer, const char *xff, char *out, size_t cap)
{
    snprintf(out, cap, "%s", peer);
    if (!xff || !*xff || !tb_proxy_trusted(list, peer))
        return;
    /* right to left: "client, proxy1, proxy2" */
    const char *end = xff + strlen(xff);
    while (end > xff) {
        const char *start = end;
        while (start > xff && start[-1] != ',')
            start--;
        const char *a = start, *b = end;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
            b--;
        char item[64];
        size_t n = (size_t)(b - a);
        uint8_t bytes[16];
        bool v4;
        if (n == 0 || n >= sizeof item) {
            snprintf(out, cap, "%s", peer); /* unparseable: the peer counts */
            return;
        }
        memcpy(item, a, n);
        item[n] = 0;
        if (!tb__addr_parse(item, bytes, &v4)) {
            snprintf(out, cap, "%s", peer);
            return;
        }
        if (!tb_proxy_trusted(list, item)) {
            snprintf(out, cap, "%s", item);
            return;
        }
        snprintf(out, cap, "%s", item); /* a trusted hop: keep going left */
        end = start > xff ? start - 1 : xff;
    }
}
