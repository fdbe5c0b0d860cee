def double(n):
    return 2 * n


def triple(n):
    result = 3 * n
    return result
