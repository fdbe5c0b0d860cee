HANDLERS = {}
ORDER = ["a", "b"]


def register(name):
    return lambda f: HANDLERS.setdefault(name, f)


@register("a")
def handle_a():
    return "a"


@register("b")
def handle_b():
    return "b"


DEFAULT = "a"
FALLBACK = "b"
LIMIT = 3
