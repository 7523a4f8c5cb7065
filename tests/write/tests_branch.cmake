# Graph branches (src/write/branch.c): the ref control protocol, races and crash enumeration.
og_test(test_write_branch LABELS "write;crash;race;threads" SOURCES write/test_write_branch.c TIMEOUT 600)
# Prefix-disjoint branch names (issue 33 F9) both ways, racing prefix-related creators, and the
# store operations of a create and a listing at 10 and 1,000 branches (issue 33 item 8).
og_test(test_branch_names LABELS "write;race;threads" SOURCES write/test_branch_names.c TIMEOUT 600)
# Maintenance on branches: automatic and explicit compaction of a branch's forks and manifest.
og_test(test_branch_maint LABELS "write;threads" SOURCES write/test_branch_maint.c TIMEOUT 300)
# Isolation: 1,000 random writes over four branches against a model.
og_test(test_branch_isolation LABELS "write" SOURCES write/test_branch_isolation.c TIMEOUT 600)
# Branch races (issue 17 item 5): writes on two branches never wait for each other's gates,
# write vs delete of its branch, delete vs an unresolved sidecar, gates off (CAS arbitrates).
og_test(test_branch_race LABELS "write;race;threads" SOURCES write/test_branch_race.c TIMEOUT 600)
# Branch merge (issue 18): the reference's fixture truth table through og_graph_merge.
og_test(test_merge LABELS "write" SOURCES write/test_merge.c TIMEOUT 600)
# Merge scenarios: every tests/merge/*.scn script (writes, merges with expected outcomes or
# conflicts, reads with expected rows).
og_test(test_merge_scenarios LABELS "write" SOURCES write/test_merge_scenarios.c TIMEOUT 600)
# Merge crash enumeration (issue 18 item 7): a three-way merge into main over three tables and
# a fast-forward into an unforked branch, both crash modes; a merge failing after its sidecar
# resolves its own intent in process.
og_test(test_merge_crash LABELS "write;crash" SOURCES write/test_merge_crash.c TIMEOUT 900)
# Merge races (issue 18 item 7): reclassification after a write to the target or the source in
# the prepare-to-gates window, a conflicting interleaved write, two merges into one target
# (threads, processes), a merge racing the delete of its source (threads, processes).
og_test(test_merge_race LABELS "write;race;threads" SOURCES write/test_merge_race.c TIMEOUT 600)
# Merge against a reference model (issue 18 item 7): 200 seeds x 30 random steps (branch
# creates, one-row writes, merges between random branches, reads), a mismatch shrunk to a
# tests/merge/*.scn scenario. OG_MODEL_SEED / OG_MODEL_SEEDS / OG_MODEL_STEPS.
og_test(test_merge_model LABELS "write" SOURCES write/test_merge_model.c TIMEOUT 900)
# Schema apply (issue 19): the truth table of step kinds on a populated graph.
og_test(test_schema_apply LABELS "write" SOURCES write/test_schema_apply.c TIMEOUT 300)
# Schema apply crash enumeration (issue 19 item 5): an apply rewriting two tables, renaming one
# and creating one, both crash modes; old schema and data or new schema and migrated data, the
# root mirror agreeing; follow-up query, load and apply again.
og_test(test_schema_crash LABELS "write;crash" SOURCES write/test_schema_crash.c TIMEOUT 900)
# Schema apply races (issue 19 items 4 and 5): writes paused between prepare and gates while an
# apply commits (typed conflict, then landing under the new schema) and the reverse, random
# interleavings with loads and mutations (threads, processes), two applies, apply vs branch
# create. OG_TEST_SEED / OG_SCHEMA_RACE_ITERS.
og_test(test_schema_race LABELS "write;race;threads" SOURCES write/test_schema_race.c TIMEOUT 600)
# Time travel across schema changes (issue 19 item 3): reads at each commit under its own
# schema, a branch forked before an apply, history-worded errors, schema show / export --at.
og_test(test_schema_time_travel LABELS "write" SOURCES write/test_schema_time_travel.c TIMEOUT 300)
