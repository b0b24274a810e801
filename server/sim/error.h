/* error.h: negative error codes shared by sim/ and net/, libuv style.
 *
 * Functions that can fail return 0 (or a count) on success and one of these
 * on failure; tb_strerror() names a code for logs and for the `message` of
 * an error sent to a client.
 */
#ifndef TB_ERROR_H
#define TB_ERROR_H

/* 0 is success; proto/c's tb_proto.h owns the name TB_OK. */
enum {
    TB_EINVAL = -1,       /* invalid argument */
    TB_ENOMEM = -2,       /* out of memory */
    TB_EFULL = -3,        /* a bounded queue is full */
    TB_EBADID = -4,       /* room id not [A-Za-z0-9_-]{1,32} */
    TB_EMAXROOMS = -5,    /* room limit reached */
    TB_EROOMFULL = -6,    /* client limit of the room reached */
    TB_EBADSCENE = -7,    /* unknown scene or kind */
    TB_ERANGE = -8,       /* value out of range or not finite */
    TB_EUNKNOWN = -9,     /* unknown parameter or message */
    TB_ENOTSUP = -10,     /* the world kind does not do this */
    TB_EPATH = -11,       /* path refused (traversal, outside root) */
    TB_ENOENT = -12,      /* no such file */
    TB_ESHUTDOWN = -13,   /* server is stopping */
    TB_ECAP = -14,        /* per-room cap reached (projectiles, grabs) */
    TB_ENOBODY = -15,     /* no such body, or nothing to grab there */
    TB_EBUSY = -16,       /* already under way (a press, a grab with that pointer) */
    TB_ELIMIT = -17,      /* too many at once (grabs) */
};

const char *tb_strerror(int code);

#endif
