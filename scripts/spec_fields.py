"""Print a message spec's field tree (name, type, versions, nullable, tag, default): a reading aid."""

import sys

from fakebroker.protocol.messages import message_type


def walk(fields, indent=0):
    for f in fields:
        extra = " ".join(f"{k}={f[k]}" for k in ("nullableVersions", "taggedVersions", "tag", "default") if k in f)
        print(" " * indent + f"{f['name']} {f['type']} v{f.get('versions')} {extra}")
        if "fields" in f:
            walk(f["fields"], indent + 2)


for name in sys.argv[1:]:
    mt = message_type(name)
    spec = mt.family.specs[0]
    print(f"== {name} {mt.versions[0]}-{mt.versions[-1]} flexible={spec.flexible_versions}")
    walk(spec.fields)
    for struct, fields in spec.common_structs.items():
        print(f"  common {struct}")
        walk(fields, 4)
