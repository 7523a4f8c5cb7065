#!/usr/bin/env python3
"""Generate examples/demo.jsonl, the graph `make demo` loads: people, companies, cities and
projects with the edges between them. Deterministic (a fixed seed, no clock), run once and
its output committed; rerun it only to change the data on purpose:
    python3 scripts/gen_demo_data.py > examples/demo.jsonl
"""
import json
import random

rng = random.Random(20240611)

CITIES = [  # name, country, population (thousands)
    ("London", "UK", 8982), ("Berlin", "Germany", 3645), ("Paris", "France", 2161),
    ("Lisbon", "Portugal", 545), ("Amsterdam", "Netherlands", 921), ("Stockholm", "Sweden", 975),
    ("Warsaw", "Poland", 1863), ("Madrid", "Spain", 3305), ("Toronto", "Canada", 2794),
    ("Austin", "USA", 965), ("Nairobi", "Kenya", 4397), ("Singapore", "Singapore", 5454),
]
INDUSTRIES = ["software", "finance", "health", "energy", "retail"]
COMPANY_WORDS_A = ["Analytical", "Blue", "Northern", "Quiet", "Bright", "Iron", "Open", "Silver",
                   "Rapid", "Green"]
COMPANY_WORDS_B = ["Engines", "Harbor", "Labs", "Systems", "Works", "Grid", "Health", "Capital",
                   "Foundry", "Markets"]
FIRST = ["Ada", "Grace", "Alan", "Linus", "Barbara", "Edsger", "Frances", "Ken", "Margaret",
         "Dennis", "Radia", "Tim", "Hedy", "John", "Katherine", "Donald", "Sophie", "Niklaus",
         "Joan", "Bjarne", "Karen", "Guido", "Lynn", "James", "Shafi", "Leslie", "Mary",
         "Robin", "Anita", "Whitfield", "Adele", "Butler", "Evelyn", "Claude", "Jean", "Fran",
         "Kristen", "Ole", "Carol", "Yukihiro"]
LAST = ["Lovelace", "Hopper", "Turing", "Torvalds", "Liskov", "Dijkstra", "Allen", "Thompson",
        "Hamilton", "Ritchie", "Perlman", "Berners", "Lamarr", "Backus", "Johnson", "Knuth",
        "Wilson", "Wirth", "Clarke", "Stroustrup", "Jones", "Rossum", "Conway", "Gosling",
        "Goldwasser", "Lamport", "Keller", "Milner", "Borg", "Diffie", "Goldberg", "Lampson",
        "Berezin", "Shannon", "Sammet", "Bilas", "Nygaard", "Dahl", "Shaw", "Matsumoto"]
ROLES = ["engineer", "designer", "manager", "scientist", "analyst"]
LANGS = ["c", "rust", "go", "python", "typescript"]
PROJECT_WORDS = ["lattice", "ember", "quill", "harbor", "prism", "sparrow", "atlas", "cinder",
                 "delta", "fable", "glacier", "helix", "iris", "juniper", "kestrel", "lumen",
                 "meridian", "nimbus", "orchid", "pylon", "quartz", "raven", "sable", "tundra",
                 "umbra", "vesper", "willow", "xenon", "yarrow", "zephyr"]

out = []


def node(t, data):
    out.append({"type": t, "data": data})


def edge(e, frm, to, data=None):
    line = {"edge": e, "from": frm, "to": to}
    if data:
        line["data"] = data
    out.append(line)


def date(y0, y1):
    return "%04d-%02d-%02d" % (rng.randint(y0, y1), rng.randint(1, 12), rng.randint(1, 28))


for name, country, pop in CITIES:
    node("City", {"name": name, "country": country, "population": pop * 1000})

companies = ["Analytical Engines"]
while len(companies) < 20:
    c = rng.choice(COMPANY_WORDS_A) + " " + rng.choice(COMPANY_WORDS_B)
    if c not in companies:
        companies.append(c)
for i, c in enumerate(companies):
    node("Company", {"name": c, "industry": "software" if i == 0 else rng.choice(INDUSTRIES),
                     "founded": rng.randint(1975, 2021)})
    edge("HeadquarteredIn", c, "London" if i == 0 else rng.choice(CITIES)[0])

projects = PROJECT_WORDS[:]
for p in projects:
    node("Project", {"name": p, "language": rng.choice(LANGS), "stars": rng.randint(40, 25000)})

people = [("Ada", "Lovelace")]
while len(people) < 200:
    pair = (rng.choice(FIRST), rng.choice(LAST))
    if pair not in people:
        people.append(pair)
handles = []
for i, (first, last) in enumerate(people):
    handle = first.lower() if i == 0 else (first + "." + last).lower()
    handles.append(handle)
    node("Person", {"handle": handle, "name": first + " " + last,
                    "email": handle + "@example.com", "born": date(1960, 2002),
                    "role": "engineer" if i == 0 else rng.choice(ROLES)})

for i, h in enumerate(handles):
    edge("LivesIn", h, "London" if i == 0 else rng.choice(CITIES)[0])
    if i == 0:
        edge("WorksAt", h, companies[0], {"since": "2019-03-01", "title": "Staff Engineer"})
    elif rng.random() < 0.93:  # a few people work nowhere
        edge("WorksAt", h, rng.choice(companies), {"since": date(2005, 2024)})

knows = set()
for i, h in enumerate(handles):
    for _ in range(rng.randint(1, 3) if i else 4):
        j = rng.randrange(len(handles))
        if j != i and (i, j) not in knows:
            knows.add((i, j))
for i, j in sorted(knows):
    edge("Knows", handles[i], handles[j], {"since": date(2008, 2024)})

for i, h in enumerate(handles):
    for p in rng.sample(projects, rng.randint(0, 3)):
        edge("ContributesTo", h, p, {"commits": rng.randint(1, 900)})

for p in projects:
    edge("Maintains", rng.choice(companies), p)

for line in out:
    print(json.dumps(line, separators=(",", ":"), sort_keys=False))
