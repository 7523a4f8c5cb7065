/* omnigraph recover list|show|resolve: the pending recovery intents of a graph (interrupted
 * writes), what the recovery barrier would do with each, and resolving one by hand; plus the
 * intent listing `snapshot` prints. Uses only the public API (docs/cli.md, "omnigraph
 * recover"). */
#include "omnigraph.h"
#include "cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmd_recover(int argc, char **argv);
static int cmd_repair(int argc, char **argv);

const cli_cmd cli_recover_commands[] = {
    {"recover", cmd_recover, "list, show or resolve the interrupted writes of a graph",
     "omnigraph recover list [--json] (--store ROOT | ROOT) | "
     "omnigraph recover show ID [--json] (--store ROOT | ROOT) | "
     "omnigraph recover resolve ID [--discard --confirm [--force]] [--json] "
     "(--store ROOT | ROOT)"},
    {"repair", cmd_repair,
     "restore a writable state, rolling lost commits forward (a dry run without --confirm)",
     "omnigraph repair [--confirm [--force]] [--branch NAME] [--json] (--store ROOT | ROOT)"},
    CLI_TABLE_END,
};

typedef struct recover_args {
    const char *root;
    const char *id;
    int discard, confirm, force, json;
} recover_args;

/* argv[2..argc): the options, the ID (show, resolve) and the root. */
static int parse(recover_args *a, int argc, char **argv, int wants_id, int resolve)
{
    const cli_cmd *self = &cli_recover_commands[0];
    memset(a, 0, sizeof *a);
    const char *words[2] = {NULL, NULL};
    int n_words = 0;
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            a->json = 1;
        } else if (resolve && !strcmp(o, "--discard")) {
            a->discard = 1;
        } else if (resolve && !strcmp(o, "--confirm")) {
            a->confirm = 1;
        } else if (resolve && !strcmp(o, "--force")) {
            a->force = 1;
        } else if (!strcmp(o, "--store")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "--store needs a value");
            if (a->root) return cli_usage_error(self, "--store given twice");
            a->root = argv[++i];
        } else if (o[0] == '-' && o[1]) {
            return cli_usage_error(self, "unknown option '%s'", o);
        } else {
            if (n_words == wants_id + 1)
                return cli_usage_error(self, "unexpected argument '%s'", o);
            words[n_words++] = o;
        }
    }
    int w = 0;
    if (wants_id) {
        if (n_words == 0)
            return cli_usage_error(self, "missing ID (an operation id from 'recover list')");
        a->id = words[w++];
    }
    if (w < n_words) {
        if (a->root)
            return cli_usage_error(self, "the root is given twice (--store and '%s')", words[w]);
        a->root = words[w];
    }
    if (!a->root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    if (a->discard && !a->confirm)
        return cli_usage_error(self, "--discard deletes the intent: add --confirm to do it");
    if (a->confirm && !a->discard) return cli_usage_error(self, "--confirm goes with --discard");
    if (a->force && !a->discard)
        return cli_usage_error(self,
                               "--force applies to a discard only (--discard --confirm --force)");
    return 0;
}

/* "3m12s": how long ago `us` (microseconds since the epoch) was. */
static void format_age(char *out, size_t cap, int64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
    int64_t s = us > 0 && now > us ? (now - us) / 1000000 : 0;
    if (s >= 86400)
        snprintf(out, cap, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(out, cap, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
    else if (s >= 60)
        snprintf(out, cap, "%lldm%llds", (long long)(s / 60), (long long)(s % 60));
    else
        snprintf(out, cap, "%llds", (long long)s);
}

static void json_str_or_null(FILE *f, const char *s)
{
    if (s)
        cli_json_str(f, s);
    else
        fputs("null", f);
}

static void print_intent_json(FILE *f, const og_intent_info *i, int with_plan)
{
    fprintf(f, "{\"operation_id\":\"%s\",\"file\":", i->operation_id);
    cli_json_str(f, i->file);
    fprintf(f, ",\"writer_kind\":");
    json_str_or_null(f, i->writer_kind);
    fprintf(f, ",\"state\":\"%s\",\"damaged\":%s,\"started_at_us\":%lld,\"owner_pid\":",
            og_intent_state_name(i->state), i->damaged ? "true" : "false",
            (long long)i->started_at_us);
    if (i->owner_pid > 0)
        fprintf(f, "%lld", (long long)i->owner_pid);
    else
        fputs("null", f);
    fprintf(f, ",\"branch\":");
    cli_json_str(f, i->branch);
    fprintf(f, ",\"actor\":");
    json_str_or_null(f, i->actor);
    fprintf(f, ",\"tables\":%zu,\"problem\":", i->tables);
    json_str_or_null(f, i->problem);
    fprintf(f, ",\"resolved_as\":");
    json_str_or_null(f, i->resolved_as);
    if (with_plan) {
        fprintf(f, ",\"action\":\"%s\",\"reason\":", og_recover_action_name(i->action));
        json_str_or_null(f, i->reason);
    }
    fputc('}', f);
}

void cli_json_intents(FILE *f, const og_intent_list *l)
{
    fputc('[', f);
    for (size_t k = 0; k < og_intent_list_count(l); k++) {
        const og_intent_info *i = og_intent_list_get(l, k);
        fprintf(f, "%s{\"operation_id\":\"%s\",\"writer_kind\":", k ? "," : "", i->operation_id);
        json_str_or_null(f, i->writer_kind);
        fprintf(f, ",\"state\":\"%s\",\"damaged\":%s}", og_intent_state_name(i->state),
                i->damaged ? "true" : "false");
    }
    fputc(']', f);
}

void cli_text_intents(FILE *f, const og_intent_list *l)
{
    size_t n = og_intent_list_count(l);
    fprintf(f, "%-*s  %-8s  %-9s  %-7s  %-7s  %s\n", OG_ID_LEN, "operation", "kind", "state", "age",
            "pid", "damaged");
    for (size_t k = 0; k < n; k++) {
        const og_intent_info *i = og_intent_list_get(l, k);
        char age[32], pid[24];
        format_age(age, sizeof age, i->started_at_us);
        if (i->owner_pid > 0)
            snprintf(pid, sizeof pid, "%lld", (long long)i->owner_pid);
        else
            snprintf(pid, sizeof pid, "-");
        fprintf(f, "%-*s  %-8s  %-9s  %-7s  %-7s  %s\n", OG_ID_LEN, i->operation_id,
                i->writer_kind ? i->writer_kind : "?", og_intent_state_name(i->state), age, pid,
                i->damaged ? "yes" : "no");
    }
}

static int recover_list(int argc, char **argv)
{
    recover_args a;
    int rc = parse(&a, argc, argv, 0, 0);
    if (rc) return rc;
    og_intent_list *l = NULL;
    if (og_root_recover_list(&l, a.root, NULL) != 0) return cli_fail(a.json);
    size_t n = og_intent_list_count(l);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"intents\":[");
        for (size_t k = 0; k < n; k++) {
            if (k) putchar(',');
            print_intent_json(stdout, og_intent_list_get(l, k), 0);
        }
        printf("]}\n");
    } else if (n == 0) {
        printf("no pending recovery intents in %s\n", a.root);
    } else {
        cli_text_intents(stdout, l);
        printf("(%zu pending intent%s; 'omnigraph recover show ID' tells what resolving one "
               "does)\n",
               n, n == 1 ? "" : "s");
    }
    og_intent_list_free(l);
    return CLI_OK;
}

static int recover_show(int argc, char **argv)
{
    recover_args a;
    int rc = parse(&a, argc, argv, 1, 0);
    if (rc) return rc;
    og_intent_info *i = NULL;
    if (og_root_recover_show(&i, a.root, a.id, NULL) != 0) return cli_fail(a.json);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"intent\":");
        print_intent_json(stdout, i, 1);
        printf("}\n");
    } else {
        char age[32];
        format_age(age, sizeof age, i->started_at_us);
        printf("operation    %s\n"
               "file         %s\n"
               "kind         %s\n"
               "state        %s\n"
               "damaged      %s\n"
               "age          %s\n",
               i->operation_id, i->file, i->writer_kind ? i->writer_kind : "? (unreadable)",
               og_intent_state_name(i->state), i->damaged ? "yes" : "no", age);
        if (i->owner_pid > 0)
            printf("owner pid    %lld\n", (long long)i->owner_pid);
        else
            printf("owner pid    -\n");
        printf("branch       %s\n", i->branch);
        if (!i->damaged) printf("tables       %zu\n", i->tables);
        if (i->actor) printf("actor        %s\n", i->actor);
        if (i->problem) printf("problem      %s\n", i->problem);
        if (i->resolved_as) printf("resolved as  %s (audit log)\n", i->resolved_as);
        printf("resolve      %s: %s\n", og_recover_action_name(i->action),
               i->reason ? i->reason : "");
    }
    og_intent_info_free(i);
    return CLI_OK;
}

static int recover_resolve(int argc, char **argv)
{
    recover_args a;
    int rc = parse(&a, argc, argv, 1, 1);
    if (rc) return rc;
    og_recover_options o = OG_RECOVER_OPTIONS_INIT;
    o.discard = a.discard;
    o.force = a.force;
    og_recover_result *r = NULL;
    if (og_root_recover_resolve(&r, a.root, a.id, &o) != 0) return cli_fail(a.json);
    if (a.json) {
        printf("{\"ok\":true,\"root\":");
        cli_json_str(stdout, a.root);
        printf(",\"operation_id\":\"%s\",\"outcome\":\"%s\",\"commit_id\":", r->operation_id,
               og_recover_outcome_name(r->outcome));
        json_str_or_null(stdout, r->commit_id[0] ? r->commit_id : NULL);
        printf("}\n");
    } else {
        printf("resolved %s: %s", r->operation_id, og_recover_outcome_name(r->outcome));
        if (r->commit_id[0]) printf(" (commit %s)", r->commit_id);
        printf("\n");
    }
    og_recover_result_free(r);
    return CLI_OK;
}

static int cmd_recover(int argc, char **argv)
{
    const cli_cmd *self = &cli_recover_commands[0];
    if (argc < 2) return cli_usage_error(self, "missing subcommand (list, show or resolve)");
    if (!strcmp(argv[1], "list")) return recover_list(argc, argv);
    if (!strcmp(argv[1], "show")) return recover_show(argc, argv);
    if (!strcmp(argv[1], "resolve")) return recover_resolve(argc, argv);
    return cli_usage_error(self, "unknown subcommand 'recover %s'", argv[1]);
}

/* ---- omnigraph repair ---------------------------------------------------------------------- */

static void repair_json(const char *root, int confirm, const og_repair_result *r)
{
    printf("{\"ok\":true,\"root\":");
    cli_json_str(stdout, root);
    printf(",\"branch\":");
    cli_json_str(stdout, r->branch);
    printf(",\"confirm\":%s,\"clean\":%s,\"repaired\":%s,\"latest_version\":%llu,"
           "\"intact_version\":%llu,\"missing_version\":",
           confirm ? "true" : "false", r->clean ? "true" : "false", r->repaired ? "true" : "false",
           (unsigned long long)r->latest_version, (unsigned long long)r->intact_version);
    if (r->missing_version)
        printf("%llu", (unsigned long long)r->missing_version);
    else
        fputs("null", stdout);
    printf(",\"lost_version\":");
    if (r->lost_version)
        printf("%llu", (unsigned long long)r->lost_version);
    else
        fputs("null", stdout);
    printf(",\"schema_damaged\":%s,\"cleanup_unfinished\":%llu,\"cleanup_versions_removed\":%llu"
           ",\"damage\":",
           r->schema_damaged ? "true" : "false", (unsigned long long)r->cleanup_unfinished,
           (unsigned long long)r->cleanup_versions_removed);
    cli_json_str(stdout, r->damage);
    /* What a confirm does with the tables ahead: pin them at their HEADs (the lost commits'
     * data kept), or, only when forced past at_stake, restore them (those commits dropped). */
    bool tables =
        og_repair_result_table_count(r) || og_repair_result_damaged_count(r) || r->missing_version;
    printf(",\"action\":\"%s\",\"at_stake\":", !tables          ? "none"
                                               : r->forced      ? "rolled_back_forced"
                                               : r->at_stake[0] ? "refuse_without_force"
                                               : r->repaired    ? "rolled_forward"
                                                                : "roll_forward");
    if (r->at_stake[0])
        cli_json_str(stdout, r->at_stake);
    else
        fputs("null", stdout);
    printf(",\"forced\":%s", r->forced ? "true" : "false");
    printf(",\"damaged\":[");
    for (size_t i = 0; i < og_repair_result_damaged_count(r); i++) {
        if (i) fputc(',', stdout);
        cli_json_str(stdout, og_repair_result_damaged(r, i));
    }
    printf("],\"tables\":[");
    for (size_t i = 0; i < og_repair_result_table_count(r); i++) {
        const og_repair_table *t = og_repair_result_table(r, i);
        printf("%s{\"alias\":", i ? "," : "");
        cli_json_str(stdout, t->alias);
        printf(",\"head\":%llu,\"published\":%llu}", (unsigned long long)t->head,
               (unsigned long long)t->published);
    }
    printf("],\"refs\":[");
    for (size_t i = 0; i < og_repair_result_ref_count(r); i++) {
        if (i) fputc(',', stdout);
        cli_json_str(stdout, og_repair_result_ref(r, i));
    }
    printf("],\"branches_without_ref\":[");
    for (size_t i = 0; i < og_repair_result_refless_count(r); i++) {
        if (i) fputc(',', stdout);
        cli_json_str(stdout, og_repair_result_refless(r, i));
    }
    printf("],\"moved_to\":");
    if (r->moved_to[0])
        cli_json_str(stdout, r->moved_to);
    else
        fputs("null", stdout);
    printf(",\"operation_id\":");
    if (r->operation_id[0])
        cli_json_str(stdout, r->operation_id);
    else
        fputs("null", stdout);
    printf(",\"commit_id\":");
    if (r->commit_id[0])
        cli_json_str(stdout, r->commit_id);
    else
        fputs("null", stdout);
    printf(",\"manifest_version\":");
    if (r->repaired)
        printf("%llu", (unsigned long long)r->manifest_version);
    else
        fputs("null", stdout);
    printf("}\n");
}

static void repair_text(const char *root, int confirm, const og_repair_result *r)
{
    if (r->clean) {
        printf("%s: nothing to repair (the newest graph-manifest version, %llu, reads and every "
               "table is at its published version)\n",
               root, (unsigned long long)r->latest_version);
        return;
    }
    const char *will = r->repaired ? "" : "would ";
    if (strcmp(r->branch, "main") != 0) printf("graph branch %s\n", r->branch);
    for (size_t i = 0; i < og_repair_result_ref_count(r); i++)
        printf("%s the branch ref %s from its branch's first version (it did not read)\n",
               r->repaired ? "rebuilt" : "would rebuild", og_repair_result_ref(r, i));
    for (size_t i = 0; i < og_repair_result_refless_count(r); i++)
        printf("graph branch %s has manifest versions but no ref (it is invisible): if it was "
               "not deleted on purpose, `omnigraph repair --branch %s --confirm` rebuilds its "
               "ref; if it was, the files are leftovers, harmless\n",
               og_repair_result_refless(r, i), og_repair_result_refless(r, i));
    if (r->schema_damaged)
        printf("the schema files do not read as the schema the graph records; %s rebuilds it "
               "exactly: %s\n",
               "_schema.pg",
               r->repaired ? "both files were rewritten from it" : "would rewrite both from it");
    if (r->latest_version != r->intact_version && r->damage[0])
        printf("graph-manifest version %llu cannot be read: %s\n",
               (unsigned long long)r->latest_version, r->damage);
    if (r->missing_version)
        printf("graph-manifest version %llu is missing (the version hint names it)\n",
               (unsigned long long)r->missing_version);
    if (r->lost_version)
        printf("graph-manifest version %llu is missing below newer intact versions: the head "
               "search stops there; the newer versions hold every commit, only reading --at "
               "version %llu is lost; %s\n",
               (unsigned long long)r->lost_version, (unsigned long long)r->lost_version,
               r->repaired ? "the version hint now starts the search above it"
                           : "repair would start the search above it");
    if (og_repair_result_damaged_count(r) || og_repair_result_table_count(r) ||
        r->missing_version || r->lost_version)
        printf("newest intact version: %llu\n", (unsigned long long)r->intact_version);
    for (size_t i = 0; i < og_repair_result_damaged_count(r); i++)
        printf("%smove %s to %s\n", will, og_repair_result_damaged(r, i),
               r->moved_to[0] ? r->moved_to : "_repair/<operation id>/");
    bool back = r->forced || (r->at_stake[0] && !r->repaired);
    if (r->at_stake[0])
        printf("the lost versions' commits cannot be rolled forward: %s\n", r->at_stake);
    for (size_t i = 0; i < og_repair_result_table_count(r); i++) {
        const og_repair_table *t = og_repair_result_table(r, i);
        if (back)
            printf("%s%srestore table %s from Lance version %llu to the published %llu, dropping "
                   "the acknowledged commits above it (the newer versions stay in its history "
                   "until cleanup)\n",
                   r->forced ? "" : "with --force: ", will, t->alias, (unsigned long long)t->head,
                   (unsigned long long)t->published);
        else
            printf("%sroll table %s forward: pin its Lance HEAD %llu (written by the lost "
                   "commits; the intact version pins %llu)\n",
                   will, t->alias, (unsigned long long)t->head, (unsigned long long)t->published);
    }
    if (r->cleanup_unfinished && r->repaired)
        printf("%llu commit(s) outside retention could not be read (a cleanup killed part way "
               "removed table versions they pin): removed their %llu graph-manifest version(s), "
               "finishing that cleanup\n",
               (unsigned long long)r->cleanup_unfinished,
               (unsigned long long)r->cleanup_versions_removed);
    else if (r->cleanup_unfinished)
        printf("%llu commit(s) outside retention cannot be read (a cleanup killed part way "
               "removed table versions they pin): would remove their graph-manifest versions, "
               "finishing that cleanup\n",
               (unsigned long long)r->cleanup_unfinished);
    bool manifest =
        og_repair_result_damaged_count(r) || og_repair_result_table_count(r) || r->missing_version;
    if (og_repair_result_refless_count(r) && !og_repair_result_ref_count(r) && !manifest &&
        !r->lost_version && !r->cleanup_unfinished && !r->schema_damaged) {
        printf("the graph manifest needs no repair; nothing else was found\n");
        return;
    }
    if (og_repair_result_ref_count(r) && !manifest && !r->lost_version && !r->cleanup_unfinished &&
        !r->schema_damaged) {
        if (!r->repaired) printf("dry run: nothing was changed; run again with --confirm\n");
        return;
    }
    if (r->lost_version && !manifest) {
        if (!r->repaired) printf("dry run: nothing was changed; run again with --confirm\n");
        return;
    }
    if (!manifest)
        printf("%s\n", r->repaired ? "the graph manifest needed no repair"
                                   : "the graph manifest needs no repair\ndry run: nothing was "
                                     "changed; run again with --confirm to repair");
    else if (r->repaired && r->forced)
        printf("repair commit %s at manifest version %llu (operation %s, audited as "
               "repaired_forced)\nthe commits of the unreadable versions were dropped; every "
               "earlier commit reads as before\n",
               r->commit_id, (unsigned long long)r->manifest_version, r->operation_id);
    else if (r->repaired)
        printf("repair commit %s at manifest version %llu (operation %s, audited as "
               "repaired)\nthe data of the unreadable versions' commits was rolled forward and "
               "reads at the head; only their commit records are gone; every earlier commit "
               "reads as before\n",
               r->commit_id, (unsigned long long)r->manifest_version, r->operation_id);
    else if (r->at_stake[0])
        printf("repair --confirm refuses: restore the graph (or the lost version files) from a "
               "backup taken after those commits, or run `omnigraph repair --confirm --force` "
               "to drop them (audited)\ndry run: nothing was changed\n");
    else
        printf("%smake a repair commit at manifest version %llu that keeps the data of the "
               "unreadable versions' commits (only their commit records are lost)\n"
               "dry run: nothing was changed; run again with --confirm to repair\n",
               will, (unsigned long long)r->intact_version + 1);
    (void)confirm;
}

static int cmd_repair(int argc, char **argv)
{
    const cli_cmd *self = &cli_recover_commands[1];
    const char *root = NULL, *branch = NULL;
    int confirm = 0, json = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--json")) {
            json = 1;
        } else if (!strcmp(o, "--confirm")) {
            confirm = 1;
        } else if (!strcmp(o, "--force")) {
            force = 1;
        } else if (!strcmp(o, "--branch")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "--branch needs a value");
            if (branch) return cli_usage_error(self, "--branch given twice");
            branch = argv[++i];
        } else if (!strcmp(o, "--store")) {
            if (i + 1 >= argc || !argv[i + 1][0])
                return cli_usage_error(self, "--store needs a value");
            if (root) return cli_usage_error(self, "--store given twice");
            root = argv[++i];
        } else if (o[0] == '-' && o[1]) {
            return cli_usage_error(self, "unknown option '%s'", o);
        } else {
            if (root) return cli_usage_error(self, "the root is given twice ('%s')", o);
            root = o;
        }
    }
    if (!root) return cli_usage_error(self, "missing the graph root (--store ROOT or ROOT)");
    if (force && !confirm) return cli_usage_error(self, "--force only goes with --confirm");
    og_repair_options o = OG_REPAIR_OPTIONS_INIT;
    o.confirm = confirm;
    o.force = force;
    o.branch = branch;
    og_repair_result *r = NULL;
    if (og_root_repair(&r, root, &o) != 0) return cli_fail(json);
    if (json)
        repair_json(root, confirm, r);
    else
        repair_text(root, confirm, r);
    og_repair_result_free(r);
    return CLI_OK;
}
