"""json_keys.py - the ```keys VERB blocks of docs/json.md, for json_cli.sh."""


def blocks(doc):
    """{verb: [key path, ...]} in the order docs/json.md lists them."""
    listed, block = {}, None
    for line in open(doc):
        line = line.strip()
        if line.startswith("```keys "):
            block = line.split()[1]
            listed.setdefault(block, [])
        elif line.startswith("```"):
            block = None
        elif block and line:
            listed[block].append(line)
    return listed
