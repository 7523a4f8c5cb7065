/* src/lang/history.c: what became of a name across schema versions. Three versions of one
 * schema, ids inherited as schema apply inherits them: a type renamed (@rename_from), a
 * property renamed, a property dropped, a type dropped, an edge renamed; the phrases for
 * earlier and later versions, a rename preferred over a drop, names no version had, and the
 * checker's errors worded with them (codes and locations unchanged). */
#include "testutil.h"

#include "lang/catalog.h"
#include "lang/history.h"
#include "lang/ir.h"

#include <string.h>

static const char V0[] = "node Person { name: String @key  age: I32?  nick: String? }\n"
                         "node Pet { name: String @key }\n"
                         "edge Knows: Person -> Person { w: I32? }\n";
static const char V1[] = "node Human @rename_from(\"Person\") {\n"
                         "    name: String @key\n"
                         "    years: I32? @rename_from(\"age\")\n"
                         "}\n"
                         "edge FriendOf: Human -> Human @rename_from(\"Knows\") { w: I32? }\n";

typedef struct fx {
    core_arena arena;
    lang_catalog *v0, *v1;
} fx;

static lang_catalog *build(fx *f, const char *src)
{
    lang_diags d;
    lang_diags_init(&d, &f->arena);
    lang_catalog *c = NULL;
    assert_og_ok(lang_catalog_build(&c, src, strlen(src), "s.pg", &d));
    return c;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    core_arena_init(&f->arena, 4096);
    f->v0 = build(f, V0);
    f->v1 = build(f, V1);
    lang_catalog_inherit(f->v1, f->v0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    lang_catalog_free(f->v0);
    lang_catalog_free(f->v1);
    core_arena_free(&f->arena);
    free(f);
    return 0;
}

static const char ID0[] = "0123456789abcdef0123456789abcdef";
static const char ID1[] = "fedcba9876543210fedcba9876543210";

static void assert_hint(const char *got, const char *want)
{
    if (!want) {
        if (got) fail_msg("expected no hint, got '%s'", got);
        return;
    }
    if (!got) fail_msg("expected '%s', got none", want);
    assert_string_equal(got, want);
}

static void test_earlier_versions(void **state)
{
    fx *f = *state;
    lang_schema_version v = {f->v0, ID0, false};
    lang_history h = {&v, 1};
    core_arena *a = &f->arena;
    const lang_catalog *cur = f->v1;
    assert_hint(lang_history_type(a, &h, cur, "Person", LANG_NODE),
                "node type `Person` was renamed to `Human`");
    assert_hint(lang_history_type(a, &h, cur, "Pet", LANG_NODE),
                "node type `Pet` was dropped (schema 0123456789ab had it)");
    /* a traversal spells edges in lower case */
    assert_hint(lang_history_type(a, &h, cur, "knows", LANG_EDGE),
                "edge type `knows` was renamed to `FriendOf`");
    assert_hint(lang_history_type(a, &h, cur, "Knows", 0),
                "edge type `Knows` was renamed to `FriendOf`");
    /* the kind asked for is respected: Pet is no edge */
    assert_hint(lang_history_type(a, &h, cur, "Pet", LANG_EDGE), NULL);
    assert_hint(lang_history_type(a, &h, cur, "Zebra", 0), NULL);
    const lang_typedef *human = &cur->types[lang_catalog_find(cur, "Human", LANG_NODE)];
    assert_hint(lang_history_prop(a, &h, cur, human, "age"),
                "property `Human.age` was renamed to `years`");
    assert_hint(lang_history_prop(a, &h, cur, human, "nick"),
                "property `Human.nick` was dropped (schema 0123456789ab had it)");
    assert_hint(lang_history_prop(a, &h, cur, human, "shoe"), NULL);
    /* no versions, no history */
    lang_history none = {NULL, 0};
    assert_hint(lang_history_type(a, &none, cur, "Person", 0), NULL);
    assert_hint(lang_history_type(a, NULL, cur, "Person", 0), NULL);
}

static void test_later_versions(void **state)
{
    fx *f = *state;
    lang_schema_version v = {f->v1, ID1, true};
    lang_history h = {&v, 1};
    core_arena *a = &f->arena;
    const lang_catalog *cur = f->v0;
    assert_hint(lang_history_type(a, &h, cur, "Human", LANG_NODE),
                "node type `Human` is `Person` in this schema");
    const lang_typedef *person = &cur->types[lang_catalog_find(cur, "Person", LANG_NODE)];
    assert_hint(lang_history_prop(a, &h, cur, person, "years"),
                "property `Person.years` is `age` in this schema");
    /* a type only the later version has */
    lang_catalog *v2 = build(f, "node Robot { name: String @key }\n");
    lang_schema_version v2v = {v2, ID1, true};
    lang_history h2 = {&v2v, 1};
    assert_hint(lang_history_type(a, &h2, cur, "Robot", LANG_NODE),
                "node type `Robot` was added later (schema fedcba987654 has it)");
    lang_catalog_free(v2);
}

static void test_rename_preferred(void **state)
{
    fx *f = *state;
    /* current: Animal is v0's Pet renamed; another version had a "Pet" that was Dog renamed
     * (another entity, gone now): one version says renamed, the other dropped */
    lang_catalog *v2 = build(f, "node Animal @rename_from(\"Pet\") { name: String @key }\n");
    lang_catalog_inherit(v2, f->v0);
    lang_catalog *dog = build(f, "node Dog { name: String @key }\n");
    lang_catalog *other = build(f, "node Pet @rename_from(\"Dog\") { name: String @key }\n");
    lang_catalog_inherit(other, dog);
    assert_true(other->types[0].id == dog->types[0].id);
    assert_true(other->types[0].id != f->v0->types[lang_catalog_find(f->v0, "Pet", 0)].id);
    lang_schema_version vs[2] = {{other, ID1, false}, {f->v0, ID0, false}};
    lang_history h = {vs, 2};
    assert_hint(lang_history_type(&f->arena, &h, v2, "Pet", LANG_NODE),
                "node type `Pet` was renamed to `Animal`");
    /* with the other version alone, it was dropped, and that version is named */
    lang_history h1 = {vs, 1};
    assert_hint(lang_history_type(&f->arena, &h1, v2, "Pet", LANG_NODE),
                "node type `Pet` was dropped (schema fedcba987654 had it)");
    lang_catalog_free(v2);
    lang_catalog_free(dog);
    lang_catalog_free(other);
}

static void test_checker_words_errors(void **state)
{
    fx *f = *state;
    lang_schema_version v = {f->v0, ID0, false};
    lang_history h = {&v, 1};
    const char *src = "query q() {\n"
                      "  match { $p: Person  $h: Human  $h knows $h }\n"
                      "  return { $h.name }\n"
                      "}\n"
                      "query r() {\n"
                      "  match { $h: Human }\n"
                      "  return { $h.nick, $h.age }\n"
                      "}\n";
    lang_diags d;
    lang_diags_init(&d, &f->arena);
    lang_query_set *qs = NULL;
    assert_og_error(lang_query_set_build_ex(&qs, f->v1, &h, src, strlen(src), "q.gq", &d),
                    OG_E_BAD_REQUEST);
    lang_diags_sort(&d);
    assert_int_equal(d.errors, 4);
    struct {
        const char *code;
        int line, col;
        const char *msg;
    } want[] = {
        {"T1", 2, 15, "unknown node type 'Person': node type `Person` was renamed to `Human`"},
        {"T4", 2, 37, "unknown edge 'knows': edge type `knows` was renamed to `FriendOf`"},
        {"T2", 7, 12,
         "'Human' has no property 'nick': property `Human.nick` was dropped (schema "
         "0123456789ab had it)"},
        {"T2", 7, 21, "'Human' has no property 'age': property `Human.age` was renamed to `years`"},
    };
    for (size_t i = 0; i < d.n && i < 4; i++) {
        assert_string_equal(d.items[i].code, want[i].code);
        assert_int_equal(d.items[i].line, want[i].line);
        assert_int_equal(d.items[i].col, want[i].col);
        assert_string_equal(d.items[i].message, want[i].msg);
    }
    lang_query_set_free(qs);
    /* without history: the same codes and places, the plain messages */
    lang_diags d2;
    lang_diags_init(&d2, &f->arena);
    assert_og_error(lang_query_set_build(&qs, f->v1, src, strlen(src), "q.gq", &d2),
                    OG_E_BAD_REQUEST);
    lang_diags_sort(&d2);
    assert_int_equal(d2.errors, 4);
    assert_string_equal(d2.items[0].message, "unknown node type 'Person'");
    assert_int_equal(d2.items[0].col, 15);
    lang_query_set_free(qs);
    /* mutations: T10 and T11 */
    const char *mut = "query m() { insert Person { name: \"x\" } update Human set { age: 3 } "
                      "where name = \"x\" }";
    lang_diags d3;
    lang_diags_init(&d3, &f->arena);
    assert_og_error(lang_query_set_build_ex(&qs, f->v1, &h, mut, strlen(mut), "m.gq", &d3),
                    OG_E_BAD_REQUEST);
    lang_diags_sort(&d3);
    assert_int_equal(d3.errors, 2);
    assert_string_equal(d3.items[0].code, "T10");
    assert_non_null(strstr(d3.items[0].message, "node type `Person` was renamed to `Human`"));
    assert_string_equal(d3.items[1].code, "T11");
    assert_non_null(strstr(d3.items[1].message, "property `Human.age` was renamed to `years`"));
    lang_query_set_free(qs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_earlier_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_later_versions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rename_preferred, setup, teardown),
        cmocka_unit_test_setup_teardown(test_checker_words_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
