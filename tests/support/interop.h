/* The lancedb interop preamble, C side (the node side is tests/support/lancedb_tool.cjs): the
 * group setup every interop test binary runs first (tests/interop/setup.sh installs the pinned
 * node packages once, then checks they load), where the node tools are, and running one tool
 * for its one-line JSON answer. Failures fail the cmocka test. */
#ifndef OG_TEST_INTEROP_H
#define OG_TEST_INTEROP_H

#include <stdint.h>

struct json_t;

/* cmocka group setup: prepare the interop tools; -1 (with a message, failing the group, never
 * skipping it) when node or the pinned packages are unavailable. */
int test_interop_group_setup(void **state);
/* The tools' folder (tests/interop in the source tree), valid after the group setup. */
const char *test_interop_dir(void);

/* Run `node <tools>/TOOL ARGS` and parse its one JSON answer; the test fails unless it exits
 * 0 with valid JSON. The caller json_decref()s the result. */
struct json_t *test_interop_tool(const char *tool, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The integer member `key` of a JSON object (the test fails if it is not one). */
int64_t test_json_int(const struct json_t *o, const char *key);

#endif
