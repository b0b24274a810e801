/* test_server_path.c: the static-file path sanitiser (server/net/path.c)
 * against a real temporary folder with a symlink pointing out of it. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "net/path.h"
#include "sim/error.h"

static char base[PATH_MAX], root[PATH_MAX + 16];

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    char tmpl[] = "/tmp/tumble-path-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return -1;
    char p[PATH_MAX + 64];
    if (!realpath(dir, base))
        return -1;
    snprintf(root, sizeof root, "%s/dist", base);
    mkdir(root, 0755);
    snprintf(p, sizeof p, "%s/assets", root);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/index.html", root);
    write_file(p, "index");
    snprintf(p, sizeof p, "%s/assets/app.js", root);
    write_file(p, "js");
    snprintf(p, sizeof p, "%s/secret.txt", base);
    write_file(p, "secret");
    char link[PATH_MAX + 64];
    snprintf(link, sizeof link, "%s/out.txt", root);
    if (symlink(p, link) != 0)
        return -1;
    snprintf(link, sizeof link, "%s/inside.js", root);
    snprintf(p, sizeof p, "%s/assets/app.js", root);
    if (symlink(p, link) != 0)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

static void plain_files_resolve_inside_the_root(void **state)
{
    (void)state;
    char out[PATH_MAX], want[PATH_MAX + 32];
    assert_int_equal(tb_path_resolve(root, "/assets/app.js", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/assets/app.js", root);
    assert_string_equal(out, want);
    assert_int_equal(tb_path_resolve(root, "/", out, sizeof out), 0);
    snprintf(want, sizeof want, "%s/index.html", root);
    assert_string_equal(out, want);
    assert_int_equal(tb_path_resolve(root, "/assets/app.js?v=3", out, sizeof out), 0);
    assert_int_equal(tb_path_resolve(root, "/assets/%61pp.js", out, sizeof out), 0);
    assert_int_equal(tb_path_resolve(root, "/inside.js", out, sizeof out), 0); /* symlink that stays in */
}

static void missing_files_and_folders_are_not_found(void **state)
{
    (void)state;
    char out[PATH_MAX];
    assert_int_equal(tb_path_resolve(root, "/nope.js", out, sizeof out), TB_ENOENT);
    assert_int_equal(tb_path_resolve(root, "/assets", out, sizeof out), TB_ENOENT);
}

static void traversal_in_every_spelling_is_refused(void **state)
{
    (void)state;
    char out[PATH_MAX];
    const char *bad[] = {
        "/../secret.txt",       "/assets/../../secret.txt", "/%2e%2e/secret.txt",  "/%2E%2E/secret.txt",
        "/%252e%252e/secret.txt", "/.%2e/secret.txt",       "/..%2fsecret.txt",    "/assets/./app.js",
        "/..\\secret.txt",      "/assets%5c..%5c..%5csecret.txt", "/a%00b",        "/%zz",
        "relative.txt",         "",                          "/out.txt",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = tb_path_resolve(root, bad[i], out, sizeof out);
        if (rc != TB_EPATH)
            fail_msg("'%s' gave %d, wanted TB_EPATH", bad[i], rc);
    }
}

static void content_types_follow_extensions(void **state)
{
    (void)state;
    assert_string_equal(tb_path_mime("/a/index.html"), "text/html; charset=utf-8");
    assert_string_equal(tb_path_mime("app.JS"), "text/javascript; charset=utf-8");
    assert_string_equal(tb_path_mime("x.wasm"), "application/wasm");
    assert_string_equal(tb_path_mime("dir.v2/file"), "application/octet-stream");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_files_resolve_inside_the_root),
        cmocka_unit_test(missing_files_and_folders_are_not_found),
        cmocka_unit_test(traversal_in_every_spelling_is_refused),
        cmocka_unit_test(content_types_follow_extensions),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
