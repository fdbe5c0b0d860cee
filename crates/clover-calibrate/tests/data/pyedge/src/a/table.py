def build_table(size, extra=None):
    table = {}
    for n in range(size):
        square = n * n
        table[n] = square
    total = sum(table.values())
    table["total"] = total
    if extra is not None:
        table.update(extra)
    return table


# Built while the module is imported: build_table's body runs in every process that imports
# this module, whatever its tests do.
SQUARES = build_table(3)


def square(n):
    return SQUARES[n]


def describe(table):
    keys = sorted(k for k in table if k != "total")
    first = keys[0]
    last = keys[-1]
    count = len(keys)
    return f"{count} keys, {first} to {last}"
