/* Embedding omnigraph in a C program, using nothing but include/omnigraph.h: create a graph in
 * a temporary directory, load a few JSONL lines, run a query with params and walk its rows,
 * make a change, read the commit list, work on a branch and merge it back, show the typed
 * error of a bad query, back the graph up while it is open, and verify both roots.
 *
 * Build (the project's CMake builds it as `embed_example`):
 *     cc embed.c $(pkg-config --cflags --libs omnigraph) -o embed
 * Run: ./embed [DIR]   (DIR: where to create the graph; default a new directory under /tmp) */
#include <omnigraph.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char SCHEMA[] = "node Person { name: String @key  age: I32? }\n"
                             "node City { name: String @key }\n"
                             "edge LivesIn: Person -> City @card(0..1)\n"
                             "edge Knows: Person -> Person\n";

static const char DATA[] = "{\"type\":\"Person\",\"data\":{\"name\":\"Ada\",\"age\":36}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Grace\",\"age\":45}}\n"
                           "{\"type\":\"Person\",\"data\":{\"name\":\"Alan\"}}\n"
                           "{\"type\":\"City\",\"data\":{\"name\":\"London\"}}\n"
                           "{\"edge\":\"LivesIn\",\"from\":\"Ada\",\"to\":\"London\"}\n"
                           "{\"edge\":\"Knows\",\"from\":\"Ada\",\"to\":\"Grace\"}\n"
                           "{\"edge\":\"Knows\",\"from\":\"Ada\",\"to\":\"Alan\"}\n";

static const char QUERIES[] = "query friends($name: String) {\n"
                              "    match { $p: Person { name: $name }  $p knows $f }\n"
                              "    return { $f.name, $f.age }\n"
                              "    order { $f.name asc }\n"
                              "}\n"
                              "query birthday($name: String, $age: I32) {\n"
                              "    update Person set { age: $age } where name = $name\n"
                              "}\n";

/* Print the thread's last error with its typed details; returns 1 (the exit status). */
static int report(const char *what)
{
    const og_error *e = og_error_last();
    fprintf(stderr, "%s failed: %s (%s)\n", what, e->message, og_code_name(e->code));
    return 1;
}

/* One cell, by its type. */
static void print_value(const og_value *v)
{
    switch (v->type) {
    case OG_VALUE_NULL:
        printf("null");
        break;
    case OG_VALUE_BOOL:
        printf("%s", v->b ? "true" : "false");
        break;
    case OG_VALUE_INT:
        printf("%lld", (long long)v->i);
        break;
    case OG_VALUE_UINT:
        printf("%llu", (unsigned long long)v->u);
        break;
    case OG_VALUE_FLOAT:
        printf("%g", v->f);
        break;
    default:
        printf("%.*s", (int)v->len, v->str);
        break; /* strings, dates, JSON text */
    }
}

/* Run `friends` for name on branch (NULL: main) at `at` and print its rows through the row
 * cursor. */
static int print_friends(og_graph *g, const char *name, const char *branch, const char *at)
{
    char params[128];
    snprintf(params, sizeof params, "{\"name\": \"%s\"}", name);
    og_query_options q = OG_QUERY_OPTIONS_INIT;
    q.source = QUERIES;
    q.source_file = "embed.gq";
    q.name = "friends";
    q.params_json = params;
    q.branch = branch; /* every call names its branch this way; NULL: main */
    q.at = at;         /* NULL: the head */
    og_result *r = NULL;
    if (og_graph_query(&r, g, &q) != 0) return report("query");
    printf("friends of %s on %s: %llu rows at commit %s\n", name, branch ? branch : "main",
           (unsigned long long)og_result_row_count(r), og_result_graph_commit_id(r));
    int rc;
    while ((rc = og_result_next(r)) == OG_OK) {
        printf(" ");
        for (size_t c = 0; c < og_result_column_count(r); c++) {
            og_value v;
            if (og_result_get(&v, r, c) != 0) {
                og_result_free(r);
                return report("reading a cell");
            }
            printf(" %s=", og_result_column_name(r, c));
            print_value(&v);
        }
        printf("\n");
    }
    og_result_free(r);
    return rc == OG_ITER_OVER ? 0 : report("reading the rows");
}

/* A branch: a change made on it alone, then merged back into main (and deleted). */
static int branch_and_merge(og_graph *g)
{
    og_branch_info *b = NULL;
    if (og_graph_create_branch(&b, g, "experiment", NULL) != 0) return report("branch create");
    printf("branch %s forked from %s at commit %s\n", b->name, b->parent, b->forked_from);
    og_branch_info_free(b);

    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = QUERIES;
    mo.source_file = "embed.gq";
    mo.name = "birthday";
    mo.params_json = "{\"name\": \"Alan\", \"age\": 41}";
    mo.branch = "experiment";
    og_write_result *m = NULL;
    if (og_graph_mutate(&m, g, &mo) != 0) return report("mutate on a branch");
    og_write_result_free(m);
    int rc = print_friends(g, "Ada", "experiment", NULL);
    if (!rc) rc = print_friends(g, "Ada", NULL, NULL); /* main does not see it yet */
    if (rc) return rc;

    og_merge_options mg = OG_MERGE_OPTIONS_INIT;
    mg.source = "experiment"; /* into main (mg.into NULL) */
    mg.delete_branch = 1;
    og_merge_result *r = NULL;
    rc = og_graph_merge(&r, g, &mg);
    if (rc == OG_E_MERGE_CONFLICTS) {
        /* Every list of a result is read by index: X_count() and the i-th item. */
        for (size_t i = 0; i < og_merge_result_conflict_count(r); i++) {
            const og_merge_conflict *c = og_merge_result_conflict(r, i);
            fprintf(stderr, "conflict: %s %s %s: %s\n", c->kind, c->type, c->id ? c->id : "-",
                    c->message);
        }
        og_merge_result_free(r);
        return report("merge");
    }
    if (rc) return report("merge");
    printf("merged %s into %s: %s, %llu row(s) changed%s\n", r->source, r->target,
           og_merge_outcome_name(r->outcome), (unsigned long long)r->rows_changed,
           r->source_deleted ? ", branch deleted" : "");
    og_merge_result_free(r);

    og_branch_list *l = NULL;
    if (og_graph_branches(&l, g) != 0) return report("branch list");
    printf("branches:");
    for (size_t i = 0; i < og_branch_list_count(l); i++)
        printf(" %s", og_branch_list_get(l, i)->name);
    printf("\n");
    og_branch_list_free(l);
    return print_friends(g, "Ada", NULL, NULL);
}

/* Check a graph root without opening it as a graph (og_root_* calls take a directory). */
static int verify(const char *what, const char *root)
{
    og_verify_report *v = NULL;
    if (og_root_verify(&v, root, NULL) != 0) return report("verify");
    size_t n = og_verify_report_problem_count(v);
    printf("%s verified: %zu problem(s), %llu table(s)\n", what, n, (unsigned long long)v->tables);
    for (size_t i = 0; i < n; i++) {
        const og_verify_problem *p = og_verify_report_problem(v, i);
        printf("  %s %s: %s (%s)\n", p->kind, p->object, p->message, p->remedy);
    }
    og_verify_report_free(v);
    return n ? 1 : 0;
}

int main(int argc, char **argv)
{
    char dir[256];
    if (argc > 1) {
        snprintf(dir, sizeof dir, "%s", argv[1]);
    } else {
        snprintf(dir, sizeof dir, "/tmp/omnigraph-embed-XXXXXX");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 1;
        }
    }
    printf("omnigraph %s, graph in %s\n", og_version(), dir);

    og_init_options io = OG_INIT_OPTIONS_INIT;
    io.schema_source = SCHEMA;
    io.schema_file = "embed.pg";
    og_init_result *init = NULL;
    if (og_root_init(&init, dir, &io) != 0) return report("init");
    printf("created a graph with %zu node types and %zu edge types\n", init->node_types,
           init->edge_types);
    og_init_result_free(init);

    og_graph *g = NULL;
    if (og_graph_open(&g, dir, NULL) != 0) return report("open");

    og_load_options lo = OG_LOAD_OPTIONS_INIT;
    lo.mode = OG_LOAD_OVERWRITE;
    og_write_result *load = NULL;
    if (og_graph_load(&load, g, "embed.jsonl", DATA, strlen(DATA), &lo) != 0) return report("load");
    printf("loaded %llu nodes and %llu edges\n",
           (unsigned long long)og_write_result_count(load, OG_WRITE_NODES),
           (unsigned long long)og_write_result_count(load, OG_WRITE_EDGES));

    int rc = print_friends(g, "Ada", NULL, NULL);

    /* A change: one graph commit. */
    og_mutate_options mo = OG_MUTATE_OPTIONS_INIT;
    mo.source = QUERIES;
    mo.source_file = "embed.gq";
    mo.name = "birthday";
    mo.params_json = "{\"name\": \"Grace\", \"age\": 46}";
    og_write_result *m = NULL;
    if (!rc && og_graph_mutate(&m, g, &mo) != 0) rc = report("mutate");
    if (!rc)
        printf("%s changed %llu node(s) in commit %s\n", og_write_result_query_name(m),
               (unsigned long long)og_write_result_count(m, OG_WRITE_NODES_UPDATED),
               og_write_result_commit_id(m));
    og_write_result_free(m);

    /* The same question now, and at the load's commit (time travel). */
    if (!rc) rc = print_friends(g, "Ada", NULL, NULL);
    if (!rc) rc = print_friends(g, "Ada", NULL, og_write_result_commit_id(load));
    og_write_result_free(load);

    og_commit_list *commits = NULL;
    if (!rc && og_graph_commits(&commits, g, NULL) != 0) rc = report("commit list");
    if (!rc) {
        printf("%zu commits, newest first:\n", og_commit_list_count(commits));
        for (size_t i = 0; i < og_commit_list_count(commits); i++) {
            const og_commit_info *c = og_commit_list_get(commits, i);
            printf("  %s  manifest version %llu\n", c->id, (unsigned long long)c->manifest_version);
        }
    }
    og_commit_list_free(commits);

    if (!rc) rc = branch_and_merge(g);

    /* A bad query: the error is typed and located. */
    if (!rc) {
        og_query_options bad = OG_QUERY_OPTIONS_INIT;
        bad.source = "query q() { match { $p: Persn } return { $p.name } }";
        bad.source_file = "bad.gq";
        og_result *r = NULL;
        if (og_graph_query(&r, g, &bad) == 0) {
            fprintf(stderr, "a bad query succeeded\n");
            rc = 1;
        } else {
            const og_error *e = og_error_last();
            printf("bad query: %s at %s:%d:%d: %s\n", og_code_name(e->code), e->file, e->line,
                   e->column, e->message);
        }
        og_result_free(r);
    }

    /* A backup of main's head while the handle is open (writers may run meanwhile). */
    char backup[300];
    snprintf(backup, sizeof backup, "%s-backup", dir);
    og_backup_result *bk = NULL;
    if (!rc && og_graph_backup(&bk, g, backup, NULL) != 0) rc = report("backup");
    if (!rc)
        printf("backed up %zu table(s), %llu row(s) of commit %s\n", bk->tables,
               (unsigned long long)bk->rows, bk->commit_id);
    og_backup_result_free(bk);
    og_graph_close(g);

    if (!rc) rc = verify("graph", dir);
    if (!rc) rc = verify("backup", backup);
    return rc;
}
