#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_schema (tests/graph/fuzz_schema.c) from real schema files.

Each real pair (_schema.pg, _schema.json) comes from a graph the omnigraph CLI made: `init`
from a schema, and `schema apply` of later schemas (renames move ids off the ones names
derive), so the seeds hold real identities and ids. From each pair come intact seeds (under
several flag bytes) and damaged ones: truncated, edited, swapped, reformatted.

Seed layout: one flag byte, then the root .pg, NUL, the root .json[, NUL, kept .pg, NUL,
kept .json] (see the comment at the top of fuzz_schema.c).

usage: make_schema_seeds.py OMNIGRAPH_BINARY [OUT_DIR]   (default OUT_DIR: corpus/schema
beside this script). Run it again after changing the schema files' format.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

SOCIAL = """node Person { name: String @key  age: I32?  email: String? @unique
  status: enum(active, inactive)?  @range(age, 0..150)  @check(email, "^[^@]+@[^@]+$") }
node Company @description("employer") { name: String @key  founded: I32? }
edge Knows: Person -> Person { since: Date? }
edge WorksAt: Person -> Company @card(0..1) { title: String? }
"""

# Each chain: the schema a graph starts from, then the schemas applied to it in order.
CHAINS = {
    "social": [SOCIAL],
    "renamed": [
        SOCIAL,
        SOCIAL.replace("node Company @description(\"employer\")",
                       "node Firm @rename_from(\"Company\") @description(\"employer\")")
        .replace("-> Company", "-> Firm")
        .replace("age: I32?", "years: I32? @rename_from(\"age\")")
        .replace("@range(age,", "@range(years,")
        .replace("status: enum(active, inactive)?", "status: enum(active, inactive, away)?"),
    ],
    "grown": [
        "node A { k: String @key }\n",
        "node A { k: String @key  x: I64?  tags: [String]? }\n"
        "node B @custom(1, n=\"z\") { id2: U64 @key  v: Vector(3)?  f: F64? }\n"
        "edge AB: A -> B { w: F32? }\n",
        "node A { k: String @key  x: I64? @index  tags: [String]? }\n"
        "node B @custom(1, n=\"z\") { id2: U64 @key  v: Vector(3)?  f: F64?  @range(f, -1.5..2) }\n"
        "edge AB: A -> B @card(0..3) { w: F32? }\n",
    ],
    "features": [
        "interface I { a: String }\n"
        "node N @description(\"x\") implements I { b: enum(x, y-z)? c: [I64]? "
        "v: Vector(2) @embed(\"a\", model=\"m\") @idx(q, r=1) @check(a, \"^a+$\") "
        "@unique(a, c) @index(a) k: U64 @key }\n"
        "edge E: N -> N @card(1..*) { @unique(src, dst) w: F32? d: DateTime? b: Blob? }\n",
    ],
    "keyless": ["node Note { text: String  at: DateTime? }\nedge Links: Note -> Note\n"],
}


# The chains whose last pair is also damaged in every way damaged() knows (the others give
# intact seeds only).
DAMAGED_FROM = ("renamed", "grown")


def run(binary, *args):
    subprocess.run([binary, *args], check=True, stdout=subprocess.DEVNULL)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def pairs_of_chain(binary, name, schemas, tmp):
    """The root pair after each step of the chain, and the kept copies."""
    root = os.path.join(tmp, name)
    out = []
    for i, src in enumerate(schemas):
        pg = os.path.join(tmp, f"{name}-{i}.pg")
        with open(pg, "w") as f:
            f.write(src)
        if i == 0:
            run(binary, "init", "--schema", pg, "--store", root)
        else:
            run(binary, "schema", "apply", "--schema", pg, "--store", root)
        out.append((read(os.path.join(root, "_schema.pg")),
                    read(os.path.join(root, "_schema.json"))))
    return out


def seed(flags, root_pg, root_js, kept=None):
    b = bytes([flags]) + root_pg + b"\0" + root_js
    if kept is not None:
        b += b"\0" + kept[0] + b"\0" + kept[1]
    return b


def damaged(pg, js, other):
    """(name, flags, seed bytes) of damaged versions of the pair (pg, js)."""
    doc = json.loads(js)
    out = []

    def dump(d):
        return json.dumps(d, separators=(",", ":")).encode()

    def edit(name, fn, flags=0x01):
        d = json.loads(js)
        fn(d)
        out.append((name, flags, seed(flags, pg, dump(d))))

    out.append(("json-truncated", 0x03, seed(0x03, pg, js[: len(js) // 2])))
    out.append(("json-empty", 0x00, seed(0x00, pg, b"")))
    out.append(("json-missing", 0x00, bytes([0x00]) + pg))
    out.append(("pg-missing-kept", 0x0b, seed(0x0b, pg, js)))
    out.append(("pg-comment", 0x00, seed(0x00, pg + b"\n// a comment\n", js)))
    out.append(("pg-edited", 0x03, seed(0x03, pg.replace(b"?", b"", 1), js, (pg, js))))
    out.append(("pg-garbage", 0x03, seed(0x03, b"node { @@", js, (pg, js))))
    out.append(("swapped", 0x03, seed(0x03, other[0], js, (pg, js))))
    out.append(("swapped-json", 0x07, seed(0x07, pg, other[1], (pg, js))))
    out.append(("not-object", 0x00, seed(0x00, pg, b"[1,2]")))
    out.append(("bad-identity-kept", 0x12, seed(0x12, pg, js)))

    def flip_identity(d):
        i = d["identity"]
        d["identity"] = ("1" if i[0] == "0" else "0") + i[1:]

    edit("identity-flipped", flip_identity, 0x03)
    edit("identity-short", lambda d: d.update(identity=d["identity"][:10]))
    edit("identity-number", lambda d: d.update(identity=12))
    edit("format-2", lambda d: d.update(format=2))
    edit("format-string", lambda d: d.update(format="1"))
    edit("no-catalog", lambda d: d.pop("catalog"))
    edit("types-object", lambda d: d["catalog"].update(types={}))
    edit("types-empty", lambda d: d["catalog"].update(types=[]), 0x03)

    def type_id(v):
        def f(d):
            d["catalog"]["types"][0]["id"] = v
        return f

    edit("type-id-short", type_id("abc"))
    edit("type-id-nonhex", type_id("zzzzzzzzzzzzzzzz"))
    edit("type-id-signed", type_id("-000000000000001"))
    edit("type-id-int", type_id(5))
    edit("type-id-other", type_id("0000000000000001"), 0x03)
    edit("type-kind-bad", lambda d: d["catalog"]["types"][0].update(kind="vertex"))
    edit("type-name-missing", lambda d: d["catalog"]["types"][0].pop("name"))
    edit("type-renamed", lambda d: d["catalog"]["types"][0].update(name="Zz"), 0x07)
    edit("type-dup", lambda d: d["catalog"]["types"].append(d["catalog"]["types"][0]))
    edit("props-missing", lambda d: d["catalog"]["types"][0].pop("properties"))
    edit("props-null-entry", lambda d: d["catalog"]["types"][0]["properties"].append(None))

    def prop_id(d):
        for t in d["catalog"]["types"]:
            if t["properties"]:
                t["properties"][0]["id"] = t["properties"][0]["id"][::-1]
                return

    edit("prop-id-reversed", prop_id, 0x03)

    def prop_dup(d):
        for t in d["catalog"]["types"]:
            if t["properties"]:
                t["properties"].append(dict(t["properties"][0], name="zz"))
                return

    edit("prop-extra", prop_dup)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary = os.path.abspath(sys.argv[1])
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "corpus", "schema")
    os.makedirs(out_dir, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="og-schema-seeds-")
    try:
        chains = {n: pairs_of_chain(binary, n, s, tmp) for n, s in CHAINS.items()}
    finally:
        shutil.rmtree(tmp)
    seeds = {}
    names = sorted(chains)
    for ci, name in enumerate(names):
        pairs = chains[name]
        other = chains[names[(ci + 1) % len(names)]][-1]
        for i, (pg, js) in enumerate(pairs):
            tag = f"{name}-{i}"
            seeds[f"{tag}-intact"] = seed(0x00, pg, js)
            seeds[f"{tag}-kept"] = seed(0x07, pg, js)
            if i > 0:
                # the root pair is one schema behind the kept one the graph records
                seeds[f"{tag}-stale-root"] = seed(0x03, pairs[i - 1][0], pairs[i - 1][1], (pg, js))
            if i == len(pairs) - 1 and name in DAMAGED_FROM:
                for dname, _, b in damaged(pg, js, other):
                    seeds[f"{tag}-{dname}"] = b
    for n, b in seeds.items():
        with open(os.path.join(out_dir, n), "wb") as f:
            f.write(b)
    print(f"{len(seeds)} seeds in {out_dir}")


if __name__ == "__main__":
    main()
