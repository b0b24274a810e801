/* path.h: map a URL path to a file inside the client folder, or refuse.
 *
 * The static file server must never serve anything outside the client
 * folder. The path is percent-decoded (twice-encoded dots are caught too:
 * we decode what lws already decoded), refused if any segment is "." or
 * "..", if it holds a backslash, a NUL or a control byte; then joined to
 * the folder and resolved with realpath(), which follows symlinks, and the
 * result must still lie under the folder's own real path.
 */
#ifndef TB_PATH_H
#define TB_PATH_H

#include <stddef.h>

/* root_real: realpath() of the client folder (no trailing slash).
 * 0 and out = real path of a regular file; TB_EPATH refused; TB_ENOENT. */
int tb_path_resolve(const char *root_real, const char *url_path, char *out, size_t out_cap);

/* Content-Type for a file name, by extension. */
const char *tb_path_mime(const char *path);

#endif
