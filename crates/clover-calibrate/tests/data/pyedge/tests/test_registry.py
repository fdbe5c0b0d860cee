def test_registry_imported_in_the_test():
    from b import registry

    assert registry.HANDLERS[registry.DEFAULT]() == "a"


def test_triple():
    from b.util import triple

    assert triple(1) == 3
