/* Failpoint registry: a small fixed table under a mutex, consulted only while armed. Testing
 * builds only (OG_TESTING): a release build compiles none of it. */
#include "core/failpoint.h"

#ifdef OG_TESTING
#include "core/error.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FP_MAX 64
#define FP_NAME 96

typedef struct fp_entry {
    char name[FP_NAME];
    core_fp_action action;
    int arg;
    uint64_t nth;
    uint64_t hits;
} fp_entry;

atomic_int core_fp_armed;
static fp_entry g_fp[FP_MAX];
static pthread_mutex_t g_fp_lock = PTHREAD_MUTEX_INITIALIZER;

static fp_entry *find(const char *name)
{
    for (int i = 0; i < FP_MAX; i++)
        if (g_fp[i].action != CORE_FP_OFF && strcmp(g_fp[i].name, name) == 0) return &g_fp[i];
    return NULL;
}

static void recount(void)
{
    int n = 0;
    for (int i = 0; i < FP_MAX; i++)
        n += g_fp[i].action != CORE_FP_OFF;
    atomic_store(&core_fp_armed, n);
}

int core_fp_eval(const char *name)
{
    pthread_mutex_lock(&g_fp_lock);
    fp_entry *e = find(name);
    if (!e) {
        pthread_mutex_unlock(&g_fp_lock);
        return 0;
    }
    uint64_t hit = ++e->hits;
    core_fp_action action = e->action;
    int arg = e->arg;
    int fire = action != CORE_FP_COUNT && (e->nth == 0 || hit == e->nth);
    pthread_mutex_unlock(&g_fp_lock);
    if (!fire) return 0;
    if (action == CORE_FP_EXIT) _exit(arg);
    int code = arg ? arg : OG_E_STORAGE;
    core_err(code, "injected failure at failpoint '%s'", name);
    if (code == OG_E_STORAGE) core_err_set_storage_kind(OG_STORAGE_IO, 0);
    return code;
}

int core_fp_set(const char *name, core_fp_action action, int arg, uint64_t nth)
{
    if (!name || !*name || strlen(name) >= FP_NAME)
        return core_err(OG_E_BAD_REQUEST, "failpoint name must be 1..%d characters", FP_NAME - 1);
    if (action == CORE_FP_EXIT && arg == 0) arg = CORE_FP_EXIT_STATUS;
    pthread_mutex_lock(&g_fp_lock);
    fp_entry *e = find(name);
    if (!e) {
        for (int i = 0; i < FP_MAX && !e; i++)
            if (g_fp[i].action == CORE_FP_OFF) e = &g_fp[i];
    }
    int rc = 0;
    if (!e) {
        rc = core_err(OG_E_RESOURCE_LIMIT, "more than %d failpoints armed", FP_MAX);
    } else if (action == CORE_FP_OFF) {
        e->action = CORE_FP_OFF;
    } else {
        snprintf(e->name, FP_NAME, "%s", name);
        e->action = action;
        e->arg = arg;
        e->nth = nth;
        e->hits = 0;
    }
    recount();
    pthread_mutex_unlock(&g_fp_lock);
    return rc;
}

void core_fp_clear(const char *name)
{
    pthread_mutex_lock(&g_fp_lock);
    fp_entry *e = find(name);
    if (e) e->action = CORE_FP_OFF;
    recount();
    pthread_mutex_unlock(&g_fp_lock);
}

void core_fp_clear_all(void)
{
    pthread_mutex_lock(&g_fp_lock);
    memset(g_fp, 0, sizeof g_fp);
    recount();
    pthread_mutex_unlock(&g_fp_lock);
}

uint64_t core_fp_hits(const char *name)
{
    pthread_mutex_lock(&g_fp_lock);
    fp_entry *e = find(name);
    uint64_t h = e ? e->hits : 0;
    pthread_mutex_unlock(&g_fp_lock);
    return h;
}

/* One "name=[N*]action[(arg)]" item. */
static int parse_item(const char *item, size_t len)
{
    char buf[256];
    if (len >= sizeof buf) return core_err(OG_E_BAD_REQUEST, "failpoint spec item too long");
    memcpy(buf, item, len);
    buf[len] = '\0';
    char *eq = strchr(buf, '=');
    if (!eq || eq == buf)
        return core_err(OG_E_BAD_REQUEST, "failpoint spec '%s': expected name=action", buf);
    *eq = '\0';
    char *act = eq + 1;
    uint64_t nth = 0;
    char *star = strchr(act, '*');
    if (star) {
        char *end;
        nth = strtoull(act, &end, 10);
        if (end != star || nth == 0)
            return core_err(OG_E_BAD_REQUEST, "failpoint '%s': bad hit count before '*'", buf);
        act = star + 1;
    }
    int arg = 0;
    char *paren = strchr(act, '(');
    if (paren) {
        char *end;
        long v = strtol(paren + 1, &end, 10);
        if (*end != ')' || end[1] != '\0')
            return core_err(OG_E_BAD_REQUEST, "failpoint '%s': bad argument in '%s'", buf, act);
        arg = (int)v;
        *paren = '\0';
    }
    core_fp_action a;
    if (strcmp(act, "error") == 0)
        a = CORE_FP_ERROR;
    else if (strcmp(act, "exit") == 0)
        a = CORE_FP_EXIT;
    else if (strcmp(act, "count") == 0)
        a = CORE_FP_COUNT;
    else if (strcmp(act, "off") == 0)
        a = CORE_FP_OFF;
    else
        return core_err(OG_E_BAD_REQUEST,
                        "failpoint '%s': unknown action '%s' (error, exit, count, off)", buf, act);
    return core_fp_set(buf, a, arg, nth);
}

int core_fp_parse(const char *spec)
{
    const char *p = spec;
    while (p && *p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len) {
            int rc = parse_item(p, len);
            if (rc) return rc;
        }
        p = semi ? semi + 1 : NULL;
    }
    return 0;
}

/* Armed from the environment before main, for tests that run the CLI. A bad spec is said on
 * stderr: a test that armed nothing must not pass silently. (Only a testing build reads
 * OG_FAILPOINTS or writes to stderr; the release library does neither.) */
__attribute__((constructor)) static void fp_from_env(void)
{
    const char *spec = getenv("OG_FAILPOINTS");
    if (spec && *spec && core_fp_parse(spec) != 0)
        fprintf(stderr, "omnigraph: ignoring OG_FAILPOINTS: %s\n", og_error_last()->message);
}

#else

/* A release build has no failpoints; ISO C wants a declaration in every translation unit. */
typedef int core_fp_release_has_none;

#endif /* OG_TESTING */
