"""Prices that never go below zero."""


def floor_at_zero(cents):
    if cents < 0:
        return 0
    return cents
