def biggest(a, b):
    if a is None:
        return b
    return a if a >= b else b
