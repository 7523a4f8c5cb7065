/* What became of a name across the schema versions a graph kept (history.h): stable ids tie a
 * type or property of another version to the catalog checked against. */
#include "lang/history.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#define SHORT_ID 12 /* hex digits of an identity quoted in messages */

static const char *kind_word(int kind)
{
    return kind == LANG_EDGE ? "edge type" : "node type";
}

/* Index of the type called `name` in c (an edge also ignoring ASCII case), or -1. */
static int type_named(const lang_catalog *c, const char *name, int kind)
{
    for (size_t i = 0; i < c->n_types; i++) {
        const lang_typedef *t = &c->types[i];
        if (kind && t->kind != kind) continue;
        if (!strcmp(t->name, name)) return (int)i;
    }
    for (size_t i = 0; i < c->n_types; i++) {
        const lang_typedef *t = &c->types[i];
        if ((!kind || kind == LANG_EDGE) && t->kind == LANG_EDGE && !strcasecmp(t->name, name))
            return (int)i;
    }
    return -1;
}

static const lang_typedef *type_by_id(const lang_catalog *c, uint64_t id, int kind)
{
    for (size_t i = 0; i < c->n_types; i++)
        if (c->types[i].id == id && c->types[i].kind == kind) return &c->types[i];
    return NULL;
}

static const lang_prop *prop_by_id(const lang_typedef *t, uint64_t id)
{
    for (size_t i = 0; i < t->n_props; i++)
        if (t->props[i].id == id) return &t->props[i];
    return NULL;
}

static const char *short_id(char buf[SHORT_ID + 1], const char *identity)
{
    snprintf(buf, SHORT_ID + 1, "%s", identity ? identity : "?");
    return buf;
}

/* What one lookup found: the version that had the name, and the name it has in the catalog
 * checked against (NULL: none, a drop or an addition). */
typedef struct found {
    const lang_schema_version *v;
    const char *now;
    int kind; /* types: the kind it had */
} found;

static void note(found *renamed, found *gone, const lang_schema_version *v, const char *now,
                 int kind)
{
    found *f = now ? renamed : gone;
    if (f->v) return; /* the first version that had it */
    f->v = v;
    f->now = now;
    f->kind = kind;
}

static const char *phrase(core_arena *a, const found *renamed, const found *gone, const char *what)
{
    char id[SHORT_ID + 1];
    if (renamed->v)
        return renamed->v->newer
                   ? core_arena_sprintf(a, "%s is `%s` in this schema", what, renamed->now)
                   : core_arena_sprintf(a, "%s was renamed to `%s`", what, renamed->now);
    if (gone->v)
        return gone->v->newer ? core_arena_sprintf(a, "%s was added later (schema %s has it)", what,
                                                   short_id(id, gone->v->identity))
                              : core_arena_sprintf(a, "%s was dropped (schema %s had it)", what,
                                                   short_id(id, gone->v->identity));
    return NULL;
}

const char *lang_history_type(core_arena *a, const lang_history *h, const lang_catalog *cur,
                              const char *name, int kind)
{
    if (!h || !cur || !name) return NULL;
    found renamed = {0}, gone = {0};
    for (size_t i = 0; i < h->n; i++) {
        const lang_schema_version *v = &h->versions[i];
        if (!v->cat) continue;
        int ti = type_named(v->cat, name, kind);
        if (ti < 0) continue;
        const lang_typedef *old = &v->cat->types[ti];
        const lang_typedef *now = type_by_id(cur, old->id, old->kind);
        note(&renamed, &gone, v, now ? now->name : NULL, old->kind);
    }
    if (!renamed.v && !gone.v) return NULL;
    const char *what =
        core_arena_sprintf(a, "%s `%s`", kind_word(renamed.v ? renamed.kind : gone.kind), name);
    return what ? phrase(a, &renamed, &gone, what) : NULL;
}

const char *lang_history_prop(core_arena *a, const lang_history *h, const lang_catalog *cur,
                              const lang_typedef *t, const char *prop)
{
    if (!h || !cur || !t || !prop) return NULL;
    found renamed = {0}, gone = {0};
    for (size_t i = 0; i < h->n; i++) {
        const lang_schema_version *v = &h->versions[i];
        if (!v->cat) continue;
        const lang_typedef *vt = type_by_id(v->cat, t->id, t->kind);
        int pi = vt ? lang_type_find_prop(vt, prop) : -1;
        if (pi < 0) continue;
        const lang_prop *now = prop_by_id(t, vt->props[pi].id);
        note(&renamed, &gone, v, now ? now->name : NULL, t->kind);
    }
    if (!renamed.v && !gone.v) return NULL;
    const char *what = core_arena_sprintf(a, "property `%s.%s`", t->name, prop);
    return what ? phrase(a, &renamed, &gone, what) : NULL;
}
