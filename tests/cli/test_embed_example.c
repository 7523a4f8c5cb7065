/* examples/embed.c as a user would run it: the built embed_example creates a graph in a
 * scratch directory, loads, queries through the row cursor, mutates, travels back to the
 * load's commit, lists the commits, changes a branch and merges it, reports a typed error,
 * backs the graph up and verifies both roots; its output is checked line by line (commit ids
 * masked). */
#include "testutil.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Replace every 26-character ULID in s with "<ID>" (in place). */
static void mask_ids(char *s)
{
    char *w = s;
    for (char *p = s; *p;) {
        size_t n = 0;
        while (p[n] && (isdigit((unsigned char)p[n]) || isupper((unsigned char)p[n])))
            n++;
        if (n == OG_ID_LEN) {
            memcpy(w, "<ID>", 4);
            w += 4;
            p += n;
        } else if (n) {
            memmove(w, p, n);
            w += n;
            p += n;
        } else {
            *w++ = *p++;
        }
    }
    *w = '\0';
}

static void test_embed_example(void **state)
{
    (void)state;
    const char *bindir = getenv("OG_TEST_RELEASE_BINDIR"); /* built on the release library */
    char dir[256], graph[300], cmd[1024];
    test_sandbox_new(dir, sizeof dir, "embed");
    snprintf(graph, sizeof graph, "%s/graph", dir);
    snprintf(cmd, sizeof cmd, "%s/embed_example '%s'", bindir ? bindir : ".", graph);
    int ex = -1;
    char *out = test_capture(cmd, &ex);
    assert_non_null(out);
    assert_int_equal(ex, 0);
    mask_ids(out);
    char want[4096];
    snprintf(want, sizeof want,
             "omnigraph %s, graph in %s\n"
             "created a graph with 2 node types and 2 edge types\n"
             "loaded 4 nodes and 3 edges\n"
             "friends of Ada on main: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=null\n"
             "  f.name=Grace f.age=45\n"
             "birthday changed 1 node(s) in commit <ID>\n"
             "friends of Ada on main: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=null\n"
             "  f.name=Grace f.age=46\n"
             "friends of Ada on main: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=null\n"
             "  f.name=Grace f.age=45\n"
             "3 commits, newest first:\n"
             "  <ID>  manifest version 3\n"
             "  <ID>  manifest version 2\n"
             "  <ID>  manifest version 1\n"
             "branch experiment forked from main at commit <ID>\n"
             "friends of Ada on experiment: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=41\n"
             "  f.name=Grace f.age=46\n"
             "friends of Ada on main: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=null\n"
             "  f.name=Grace f.age=46\n"
             "merged experiment into main: fast_forward, 1 row(s) changed, branch deleted\n"
             "branches: main\n"
             "friends of Ada on main: 2 rows at commit <ID>\n"
             "  f.name=Alan f.age=41\n"
             "  f.name=Grace f.age=46\n"
             "bad query: bad_request at bad.gq:1:25: T1: unknown node type 'Persn'\n"
             "backed up 4 table(s), 7 row(s) of commit <ID>\n"
             "graph verified: 0 problem(s), 4 table(s)\n"
             "backup verified: 0 problem(s), 4 table(s)\n",
             og_version(), graph);
    assert_string_equal(out, want);
    free(out);
    /* The graph it made is a real one: a second run on the same directory refuses to init. */
    out = test_capture(cmd, &ex);
    assert_int_equal(ex, 1);
    free(out);
    test_sandbox_done(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_embed_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
