_RATES = None


def rates():
    global _RATES
    if _RATES is None:
        _RATES = {"eur": 2, "usd": 3}
    return _RATES


def convert(amount, currency):
    return amount * rates()[currency]
